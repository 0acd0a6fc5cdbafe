// Kubeflow's PyTorchJob: the PET_* variables its operator gives each pod, the ones torchrun
// reads in place of its flags. Pure.
#pragma once

#include <optional>

#include "cluster/detect.hpp"

namespace xlaunch::cluster {

/// Present when PET_NNODES is set: machines from PET_NNODES ("2", "2:2", or an elastic
/// "MIN:MAX", as --nnodes takes them), this pod's rank from PET_NODE_RANK (else RANK, the
/// pod's index; in an elastic job only rank 0's hosting matters), machine 0 from
/// PET_MASTER_ADDR (else MASTER_ADDR), its port from PET_MASTER_PORT (else MASTER_PORT), and
/// a numeric PET_NPROC_PER_NODE as the workers per machine. A PET_NNODES, rank or port that
/// cannot be read (or a rank not below the machines) is a refusal.
std::optional<ClusterDetection> detect_pytorchjob(const Environment& env);

}  // namespace xlaunch::cluster
