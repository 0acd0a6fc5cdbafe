// What one launch builds up, step by step (job/launch.cpp lists the steps; each step's file
// says what it fills in). Members are destroyed in reverse order, which the launch relies on:
// the agent before the store it may clear, the store (its thread joined) before the guardian,
// and the guardian, which kills whatever is left of the run, last.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cluster/detect.hpp"
#include "cluster/etcd_backend.hpp"
#include "cluster/join_backend.hpp"
#include "config/join_settings.hpp"
#include "config/settings.hpp"
#include "gpu/nvml.hpp"
#include "job/launch.hpp"
#include "launcher/environment.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/process.hpp"
#include "rendezvous/store_server.hpp"

namespace xlaunch::job {

struct Job {
  explicit Job(const LaunchRequest& r) : request(r), parent_env(launcher::current_environment()) {}
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  const LaunchRequest& request;

  launcher::Environment parent_env;  // xlaunch's own, read first

  // The plan (plan_step.hpp).
  cluster::ClusterDetection cluster;
  config::Settings settings;  // the request's, with what the cluster manager says
  /// NVML, kept open from the plan's discovery for the run's GPU sampling (gpu_watch.hpp).
  std::unique_ptr<gpu::NvmlSession> nvml_session;
  std::optional<gpu::NvmlReport> nvml;  // what nvml_session reported
  /// The supervisor reads it by reference: each round's membership updates it in place.
  launcher::LaunchPlan plan;
  config::JoinSettings join;
  bool via_etcd = false;  // several machines that meet in etcd
  std::string etcd_endpoint;

  // Orphan containment (guardian.hpp).
  std::optional<launcher::GroupGuardian> guardian;

  // The workers' store (store_hosting.hpp).
  std::optional<rendezvous::StoreServer> store;
  /// etcd: the socket every launcher binds before the join; rank 0's serves the workers.
  std::optional<rendezvous::ListeningSocket> etcd_store_socket;
  std::string host;  // this machine's name for the others and the log

  // The join of several machines (join.hpp).
  std::unique_ptr<cluster::JoinBackend> agent;
  cluster::EtcdBackend* etcd_agent = nullptr;  // agent, when the join is through etcd
  /// The launchers' own records, which an elastic job keeps from round to round.
  std::string agent_keys;
};

}  // namespace xlaunch::job
