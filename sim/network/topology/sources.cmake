target_sources(wallsim_network PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cluster_spec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/topology.cpp
)
