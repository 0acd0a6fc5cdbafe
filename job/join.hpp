// The step that joins the other machines of a job (cluster/join_backend.hpp), and the start
// of each later round, which the supervisor calls before each attempt.
#pragma once

#include "job/job_state.hpp"

namespace xlaunch::job {

/// With several machines: joins the job through machine 0's store or etcd and takes this
/// machine's place in it (ranks, sizes, the job's run id, the store's address). Throws
/// LaunchError with the join's exit code when the job does not form.
void join_machines(Job& job);

/// Before each attempt after the first: empties the store and, with several machines, begins
/// the round on every machine together (an elastic job re-forms). Throws AgentError when the
/// job cannot go on.
void begin_attempt(Job& job, int attempt);

}  // namespace xlaunch::job
