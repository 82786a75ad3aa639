// Named datasets: the public datasets the example jobs use, each described once here by
// where its publisher serves it, what its files must hash to, its licence and citation, and
// which reader reads the folder it unpacks to. A job says `dataset: cora` instead of a path
// into someone's checkout; `partita datasets download cora` fetches it into the cache
// (datasets/dataset_cache.h). Torch-free and independent of the readers: the registry names
// a reader's format, the partitioner reads the folder.
#pragma once

#include <string>
#include <vector>

namespace partita::datasets {

// How a downloaded file becomes files of the dataset's folder.
enum class Unpack {
  none,     // the file itself, under the last component of its URL
  archive,  // a zip or (gzipped) tar archive, extracted (libarchive detects which)
};

// One file the publisher serves.
struct RemoteFile {
  std::string url;  // canonical http(s) URL
  // SHA-256 of the served bytes, lowercase hex; empty when no sum is recorded (then the
  // dataset's contents carry the sums, or the first download records one: needs_first_sum()).
  std::string sha256;
  Unpack unpack = Unpack::none;
};

// One file of the unpacked folder a reader needs, relative to the dataset's folder.
struct ContentFile {
  std::string path;
  std::string sha256;  // as RemoteFile::sha256: empty when not recorded
};

struct NamedDataset {
  std::string name;      // what jobs and the CLI call it: lowercase, [a-z0-9-]
  std::string title;     // one line: what it is
  std::string format;    // the reader of its folder (partitioner/readers.h); empty: none yet
  std::string homepage;  // where the publisher describes it
  std::vector<RemoteFile> files;
  // The files the reader needs. An archive whose members sit under one top-level folder
  // (ml-latest-small/, cora/) has that folder stripped, so these are found at the dataset's
  // folder's root.
  std::vector<ContentFile> contents;
  std::string licence;   // the terms it is published under, as the publisher states them
  std::string citation;  // what to cite when using it
};

// Every registered dataset, sorted by name.
const std::vector<NamedDataset>& registry();

// The dataset called `name`, or nullptr.
const NamedDataset* find_dataset(const std::string& name);

// The dataset called `name`; UsageError naming the known names otherwise.
const NamedDataset& dataset_or_throw(const std::string& name);

// True when nothing of `d` has a recorded sum: its first download is checked against
// nothing, and records the sums it computed (dataset_cache.h).
bool needs_first_sum(const NamedDataset& d);

}  // namespace partita::datasets
