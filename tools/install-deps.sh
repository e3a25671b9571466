#!/usr/bin/env bash
# Installs the Debian packages tessera builds with; does nothing when all are present.
# OpenMPI (openmpi-bin, libopenmpi-dev) lets `mpirun -np N tessera sweep` share runs among ranks.
# `install-deps.sh fuzz` adds clang and its libFuzzer runtime, for `make fuzz` only.
set -euo pipefail
packages=(cmake make g++ pkg-config libsystemc-dev libboost-program-options-dev libgtest-dev
          libyaml-cpp-dev nlohmann-json3-dev zlib1g-dev openmpi-bin libopenmpi-dev verilator)
[ "${1:-}" = fuzz ] && packages+=(clang libclang-rt-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
