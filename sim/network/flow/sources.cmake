target_sources(wallsim_network PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/flow_local_settle.cpp
  ${CMAKE_CURRENT_LIST_DIR}/flow_network.cpp
  ${CMAKE_CURRENT_LIST_DIR}/flow_settle.cpp
  ${CMAKE_CURRENT_LIST_DIR}/flow_solution_cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/max_min_solver.cpp
)
