// SLURM: the variables srun gives each task of a step. Pure.
#pragma once

#include <optional>

#include "cluster/detect.hpp"

namespace xlaunch::cluster {

/// Inside an srun step (SLURM_STEP_ID or SLURM_STEPID set): one launcher per node of the
/// step. The step's own variables win over the job's, since a step may use part of the
/// allocation (salloc -N3, then srun -N2 -w n[2-3]): machines from SLURM_STEP_NUM_NODES
/// (else SLURM_NNODES), this node's index from SLURM_NODEID (relative to the step), machine
/// 0 the first host of SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST, SLURM_NODELIST). A node
/// count or SLURM_NODEID that is not a number, or a node id not below the count, is a refusal.
/// More than one task on this node (SLURM_STEP_TASKS_PER_NODE, else SLURM_STEP_NUM_TASKS
/// against the nodes) is a refusal: each would be machine N of its own job. None outside a
/// step (an sbatch script or salloc shell has no step variables).
std::optional<ClusterDetection> detect_slurm(const Environment& env);

/// SLURM's tasks-per-node syntax ("2(x3),1"), one count per node. Throws
/// std::invalid_argument naming the problem, also for more than kMaxMachines nodes in all.
std::vector<int> expand_tasks_per_node(std::string_view text);

}  // namespace xlaunch::cluster
