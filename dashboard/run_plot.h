// A finished (or running) job's curves as an image, without a browser: `partita plot
// RUN_DIR -o curves.png|.svg`, for reports and for clusters with no browser. Reads
// RUN_DIR/metrics.jsonl (training/metrics_record.h, the file the job driver writes) and
// draws three panels per epoch: loss (train, val, test), accuracy (train, val, test) and
// throughput (batches/s).
//
// Drawn by PLplot (Debian's libplplot-dev) through its cairo driver (plplot-driver-cairo:
// the pngcairo and svgcairo devices): a maintained C plotting library that renders
// headless, straight to a file, with no display, no interpreter and no browser, and whose
// Debian package is a plain shared library (gnuplot or matplotlib would be a program to
// run; a JavaScript chart library needs a browser to render).
//
// PLplot keeps global state: calls are serialised by a lock here.
#pragma once

#include <string>
#include <vector>

#include "training/job_driver.h"

namespace partita::dashboard {

// The image format an output path asks for, by its extension (case-insensitive): "png" or
// "svg". Throws UsageError naming the extension otherwise.
std::string plot_format(const std::string& output);

// Draws `epochs` into `output` (PNG or SVG by extension), titled `title`. Throws
// UsageError for an unknown extension or no epoch to draw; Error when the output cannot be
// written or PLplot's cairo driver is missing.
void plot_epochs(const std::vector<EpochMetrics>& epochs, const std::string& title, const std::string& output);

// plot_epochs of RUN_DIR/metrics.jsonl, titled with the folder's name. Throws Error naming
// the folder when it holds no metrics.jsonl, and the file and line for a malformed line.
void plot_run(const std::string& run_dir, const std::string& output);

}  // namespace partita::dashboard
