#include "dashboard/run_plot.h"

#include <plplot.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "base/error.h"
#include "training/metrics_record.h"

namespace partita::dashboard {

namespace fs = std::filesystem;

namespace {

std::mutex plplot_mutex;  // PLplot's state is global

// Colour map 0 entries this file sets and uses.
constexpr PLINT kBackground = 0, kInk = 1, kTrain = 2, kVal = 3, kTest = 4;

struct Curve {
  const char* name;
  PLINT color;
  std::vector<PLFLT> y;
};

// One panel: axes fitted to the curves, a line with a dot per epoch for each, a legend.
void panel(const std::string& title, const std::string& y_label, const std::vector<PLFLT>& x,
           const std::vector<Curve>& curves) {
  PLFLT x_min = x.front(), x_max = x.back();
  if (x_min == x_max) {
    x_min -= 0.5;
    x_max += 0.5;
  }
  PLFLT y_min = INFINITY, y_max = -INFINITY;
  for (const Curve& c : curves) {
    for (PLFLT v : c.y) {
      y_min = std::min(y_min, v);
      y_max = std::max(y_max, v);
    }
  }
  const PLFLT pad = y_max > y_min ? (y_max - y_min) * 0.08 : 0.5;
  pladv(0);
  plvpor(0.17, 0.95, 0.2, 0.86);
  plwind(x_min, x_max, y_min - pad, y_max + pad);
  plcol0(kInk);
  plbox("bcnst", 0, 0, "bcnstv", 0, 0);
  pllab("epoch", y_label.c_str(), title.c_str());
  const PLINT n = static_cast<PLINT>(x.size());
  for (const Curve& c : curves) {
    plcol0(c.color);
    plwidth(2);
    plline(n, x.data(), c.y.data());
    plpoin(n, x.data(), c.y.data(), 17);  // a filled dot per epoch
  }
  plwidth(1);
  if (curves.size() < 2) return;
  std::vector<PLINT> options, colors, styles, symbol_numbers;
  std::vector<PLFLT> widths, scales;
  std::vector<const char*> texts, symbols;
  for (const Curve& c : curves) {
    options.push_back(PL_LEGEND_LINE);
    colors.push_back(c.color);
    styles.push_back(1);
    widths.push_back(2);
    texts.push_back(c.name);
    symbols.push_back("");
    symbol_numbers.push_back(0);
    scales.push_back(1);
  }
  PLFLT legend_width = 0, legend_height = 0;
  const PLINT count = static_cast<PLINT>(curves.size());
  pllegend(&legend_width, &legend_height, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
           PL_POSITION_TOP | PL_POSITION_RIGHT | PL_POSITION_INSIDE, 0.02, 0.02, 0.08, kBackground, kInk, 1, 0, 0,
           count, options.data(), 0.6, 0.7, 1.6, 0.0, colors.data(), texts.data(), nullptr, nullptr, nullptr, nullptr,
           colors.data(), styles.data(), widths.data(), colors.data(), scales.data(), symbol_numbers.data(),
           symbols.data());
}

}  // namespace

std::string plot_format(const std::string& output) {
  std::string ext = fs::path(output).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".png") return "png";
  if (ext == ".svg") return "svg";
  throw UsageError("cannot plot to " + output + ": unknown image format '" + (ext.empty() ? "(no extension)" : ext) +
                   "' (use .png or .svg)");
}

void plot_epochs(const std::vector<EpochMetrics>& epochs, const std::string& title, const std::string& output) {
  const std::string device = plot_format(output) + "cairo";
  if (epochs.empty()) throw UsageError("nothing to plot: no finished epoch");
  std::vector<PLFLT> x;
  Curve loss[] = {{"train", kTrain, {}}, {"val", kVal, {}}, {"test", kTest, {}}};
  Curve accuracy[] = {{"train", kTrain, {}}, {"val", kVal, {}}, {"test", kTest, {}}};
  Curve rate = {"batches/s", kTrain, {}};
  for (const EpochMetrics& m : epochs) {
    x.push_back(m.epoch);
    loss[0].y.push_back(m.train_loss);
    loss[1].y.push_back(m.val_loss);
    loss[2].y.push_back(m.test_loss);
    accuracy[0].y.push_back(m.train_accuracy);
    accuracy[1].y.push_back(m.val_accuracy);
    accuracy[2].y.push_back(m.test_accuracy);
    rate.y.push_back(m.batches_per_second);
  }
  for (const Curve* c : {&loss[0], &loss[1], &loss[2], &accuracy[0], &accuracy[1], &accuracy[2], &rate}) {
    for (PLFLT v : c->y) {
      if (!std::isfinite(v)) throw Error("cannot plot a value that is not finite (" + std::string(c->name) + ")");
    }
  }

  std::lock_guard<std::mutex> lock(plplot_mutex);
  // PLplot asks on stdin for another device when the one named is missing, and exits the
  // process when it cannot open its file: both are checked here first.
  {
    std::vector<const char*> menu(128), names(128);
    const char** menu_data = menu.data();
    const char** names_data = names.data();
    int count = static_cast<int>(names.size());
    plgDevs(&menu_data, &names_data, &count);
    bool found = false;
    for (int i = 0; i < count; ++i) found = found || device == names[i];
    if (!found) throw Error("PLplot has no " + device + " device: install its cairo driver (Debian: plplot-driver-cairo)");
  }
  {
    std::ofstream probe(output, std::ios::binary | std::ios::trunc);
    if (!probe) throw file_error(output, "cannot write");
  }
  plsdev(device.c_str());
  plsfnam(output.c_str());
  plspage(0, 0, 1500, 480, 0, 0);
  plscol0(kBackground, 255, 255, 255);
  plscol0(kInk, 40, 40, 40);
  plscol0(kTrain, 31, 119, 180);
  plscol0(kVal, 255, 127, 14);
  plscol0(kTest, 44, 160, 44);
  plssub(3, 1);
  plinit();
  plschr(0, 0.7);  // smaller characters: three panels side by side
  panel("loss - " + title, "loss", x, {loss[0], loss[1], loss[2]});
  panel("accuracy - " + title, "accuracy", x, {accuracy[0], accuracy[1], accuracy[2]});
  panel("throughput - " + title, "batches/s", x, {rate});
  plend();
}

void plot_run(const std::string& run_dir, const std::string& output) {
  plot_format(output);  // the usage error first, before reading anything
  const fs::path metrics = fs::path(run_dir) / kMetricsFileName;
  if (!fs::is_directory(run_dir)) throw Error("cannot plot " + run_dir + ": no such folder");
  if (!fs::exists(metrics)) {
    throw Error("cannot plot " + run_dir + ": it holds no " + kMetricsFileName + " (is it a job's output folder?)");
  }
  const std::vector<EpochMetrics> epochs = read_metrics_file(metrics.string());
  if (epochs.empty()) throw Error("cannot plot " + run_dir + ": " + metrics.string() + " holds no epoch yet");
  std::string title = fs::path(run_dir).lexically_normal().filename().string();
  if (title.empty() || title == ".") title = fs::absolute(run_dir).lexically_normal().parent_path().filename().string();
  plot_epochs(epochs, title, output);
}

}  // namespace partita::dashboard
