#!/usr/bin/env bash
# Installs wallsim's build dependencies on Debian 12 (run as root). Safe to re-run.
set -euo pipefail
packages=(cmake ninja-build g++ libboost-graph-dev nlohmann-json3-dev libspdlog-dev libcli11-dev
          catch2 libeigen3-dev libbenchmark-dev libopenmpi-dev openmpi-bin libyaml-cpp-dev
          libtomlplusplus-dev
          chromium clang libclang-rt-14-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
