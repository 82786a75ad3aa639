// The status page's files, compiled into the binary (cmake/EmbedFiles.cmake turns them
// into a C++ source at build time): the page (dashboard/web/index.html), its script
// (dashboard/web/dashboard.js) and the charting library, Debian's libjs-d3
// (/usr/share/javascript/d3/d3.min.js at build time). So the installed `partita` serves the
// page without any of those files, or the d3 package, on the machine it runs on.
#pragma once

#include <cstddef>
#include <string>

namespace partita::dashboard {

struct Asset {
  const char* name;          // as requested under /static/, e.g. "d3.min.js"
  const char* content_type;  // e.g. "application/javascript; charset=utf-8"
  const unsigned char* data;
  size_t size;
};

extern const Asset kAssets[];
extern const size_t kAssetCount;

// The asset of that name, or nullptr.
const Asset* find_asset(const std::string& name);

}  // namespace partita::dashboard
