// `xlaunch launch` as a list of steps. Each step is a function of its own file; the Job
// (job_state.hpp) carries what one step leaves for the next.
#include "job/launch.hpp"

#include <signal.h>

#include "diagnose/stacks_target.hpp"
#include "job/early_start.hpp"
#include "job/finish.hpp"
#include "job/guardian.hpp"
#include "job/job_state.hpp"
#include "job/join.hpp"
#include "job/plan_step.hpp"
#include "job/store_hosting.hpp"
#include "job/supervise.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/process.hpp"
#include "launcher/run_files.hpp"
#include "launcher/spawner.hpp"

namespace xlaunch::job {

using namespace launcher;

int launch(const LaunchRequest& request) {
  // First, while this process has one thread: every worker is made there (spawner.hpp).
  // Destroyed last, after the job. Usually forked already, before the command line was parsed
  // (early_start.hpp), as was the guardian start_guardian takes over.
  const Spawner spawner = take_spawner();
  // A closed console must not kill the launcher mid-job; write errors are handled instead.
  ::signal(SIGPIPE, SIG_IGN);
  diagnose::survive_old_dump_signal();
  Job job(request);
  start_guardian(job);  // before any thread exists: NVML's, in plan_job, is the first
  plan_job(job);
  warn_if_bf16_unsupported(job);
  host_store(job);
  job.host = job.settings.local_addr.value_or(host_name());  // torchrun's --local_addr
  // From the join on, a stop signal waits: the join looks for it between its waits (the
  // other machines must hear of it), then the supervisor's handlers take it, so that the
  // run ends with its summary.json. Until then it ends xlaunch as usual.
  std::optional<StopSignalsHeld> held(std::in_place);
  join_machines(job);
  RunFiles files(job.plan.run_id, job.plan.log_dir,
                 output_off_console(job.plan) ? RunFiles::Logs::in_temp : RunFiles::Logs::none);
  announce_run(job, files);
  const Outcome outcome = supervise(job, files, held);
  return finish(job, files, outcome);
}

}  // namespace xlaunch::job
