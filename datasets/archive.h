// Unpacking the archives publishers serve datasets in (zip, tar, tar.gz: libarchive
// detects which), safely: an entry may not leave the folder it is unpacked into.
#pragma once

#include <string>

namespace partita::datasets {

// Extracts the regular files and folders of `archive` into the existing folder `dest`.
// Symbolic and hard links, devices and the like are skipped (with a warning); an absolute
// entry path or one with a `..` component is an Error naming the archive and entry, as is a
// damaged or truncated archive.
void extract_archive(const std::string& archive, const std::string& dest);

}  // namespace partita::datasets
