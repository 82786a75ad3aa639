#include "dashboard/assets.h"

namespace partita::dashboard {

const Asset* find_asset(const std::string& name) {
  for (size_t i = 0; i < kAssetCount; ++i) {
    if (name == kAssets[i].name) return &kAssets[i];
  }
  return nullptr;
}

}  // namespace partita::dashboard
