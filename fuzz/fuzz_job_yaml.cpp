// parse_job (training/job_config.h): a job file as `partita run`/`submit` reads it, with the
// scratch folder as the folder relative paths start from.
#include "fuzz/fuzz_input.h"
#include "training/job_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& dir = partita::fuzz::ScratchDir::get();
  try {
    partita::JobConfig job = partita::parse_job(std::string(partita::fuzz::as_text(data, size)), dir.path(), "job.yaml");
    // What a parsed job says must read back as the same job.
    volatile size_t n = partita::job_to_yaml(job).size();
    (void)n;
  } catch (const partita::Error&) {
  }
  return 0;
}
