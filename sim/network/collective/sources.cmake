target_sources(wallsim_network PRIVATE
  collective/collective.cpp
  collective/collective_plan.cpp
  collective/comm_profile.cpp
  collective/nccl_latency.cpp
  collective/plan_builders.cpp
  collective/planner.cpp
)
