// The step that hosts the workers' store (rendezvous/store_server.hpp): machine 0 binds and
// serves it; with etcd every launcher binds one before the join and rank 0's serves it.
#pragma once

#include "job/job_state.hpp"

namespace xlaunch::job {

/// Binds (and on machine 0 starts) the store; sets the plan's store port. Throws
/// LaunchError (exit 1) when the address cannot be bound, except for a launcher that is
/// machine 0 only because the endpoint names this machine (JoinSettings::host_or_join) and
/// finds the port taken: it becomes a joining launcher (machine rank -1, by arrival).
void host_store(Job& job);

/// Starts serving the workers' store on `socket`, on a thread of its own.
void serve_store(Job& job, rendezvous::ListeningSocket socket);

}  // namespace xlaunch::job
