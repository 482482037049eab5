#!/usr/bin/env bash
# Installs everything gloowatch needs to build, test and run its demo, from
# Debian 12 packages.
set -euo pipefail
packages=(
  build-essential cmake pkg-config clang-format clang libclang-rt-14-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libgloo-dev libabsl-dev libyaml-cpp-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libsystemd-dev
  # used by the tests
  python3-torch python3-grpcio python3-grpc-tools python3-protobuf python3-yaml
  prometheus faketime iperf3 sockperf nftables iproute2 procps systemd
)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${packages[@]}"
