target_sources(wallsim_network PRIVATE
  model/analytical_model.cpp
  model/collective_runner.cpp
  model/flow_model.cpp
  model/network_model.cpp
)
