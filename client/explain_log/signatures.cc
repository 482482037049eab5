#include "client/explain_log/signatures.h"

#include <string>

#include "re2/re2.h"

namespace gloowatch::client {
namespace {

// Message texts from the code that prints them: pytorch/gloo
// gloo/transport/tcp/{pair,unbound_buffer,device}.cc and gloo/common
// (GLOO_ENFORCE "[enforce fail at FILE:LINE] COND. A vs B"), PyTorch's
// ProcessGroupGloo.cpp and c10d TCPStore / socket.cpp (both the 1.x wordings
// and the 2.x "[c10d] The client socket has ..." ones), torch elastic's agent
// and rendezvous, the kernel's OOM killer; checked against real torch runs
// (tests/client/torch/gloo_failure.py). Order matters: a line counts for the
// first signature that matches, so specific causes come before the generic
// wrappers that quote them (connectFullMesh).
using S = LogSeverity;
using St = Stage;

// A store-barrier line where more workers joined than the world holds; a
// line without the counts (a store key written twice) is taken as is.
bool MoreJoinedThanWorld(absl::string_view line) {
  static const RE2* counts =
      new RE2(R"(\(world_size=(\d+), (?:worker_count|num_workers_joined)=(\d+))");
  int world = 0, joined = 0;
  if (!RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *counts, &world, &joined)) {
    return true;
  }
  return joined > world;
}

// Whether a bracketed address in the line ("[127.0.1.1]:41234", Gloo's
// local= and remote=) is one no other host can reach: loopback, the Docker
// bridge's default 172.17.0.0/16, link-local, or the unspecified 0.0.0.0.
bool OnWrongInterface(absl::string_view line) {
  static const RE2* bracketed = new RE2(R"(\[([0-9a-fA-F.:]+)\])");
  static const RE2* unreachable = new RE2(
      R"(^(?:::ffff:)?(?:127\.\d+\.\d+\.\d+|172\.17\.\d+\.\d+|169\.254\.\d+\.\d+|0\.0\.0\.0)$|^::1$|^[fF][eE][89aAbB][0-9a-fA-F]?:)");
  re2::StringPiece in(line.data(), line.size());
  std::string address;
  while (RE2::FindAndConsume(&in, *bracketed, &address)) {
    if (RE2::PartialMatch(address, *unreachable)) return true;
  }
  return false;
}

// Laid out by hand as clang-format would: past a certain size its layout
// search gives up on one initializer this long.
// clang-format off
constexpr LogSignature kSignatures[] = {
    // The shell's "Killed" alone on a line, also behind a launcher's tag
    // (horovodrun and mpirun --tag-output: "[0]<stderr>:Killed"); exit status
    // 137 = 128 + 9, as horovod's launcher says it ("Process 0 exit with
    // status code 137.").
    {"rank_killed",
     R"(Out of memory: Kill(ed)? process|invoked oom-killer|\bOOMKilled\b|exitcode\s*:\s*-9\b|Signal 9 \(SIGKILL\) received|<Signals\.SIGKILL: 9>|\bexit(?:ed)?(?: with)?(?: ?status)?(?: ?code)?:? ?137\b|on signal 9 \(Killed\)|(?:^|[\]>]:|\btask \d+:|^\d+:|\d|\))\s*Killed\s*$|\bexits with return code = -9\b|terminated with signal SIGKILL\b|is killed by signal: Killed\b|Detected \d+ oom-kill event|OutOfMemoryError: Task was killed due to the node running low on memory)",
     S::kError, St::kProcess,
     "A rank's process was killed (SIGKILL, most often by the kernel's OOM killer). The other "
     "ranks' timeouts and closed connections that follow are its echo, not separate faults.",
     "Check `dmesg -T | grep -i oom` / `journalctl -k` on that host and the job's memory limit "
     "(cgroup, Kubernetes limits, exit code 137); reduce batch size or workers per host."},
    // SIGBUS (7) too: a rank touching shared memory past the end of /dev/shm
    // (Docker's 64 MB default) dies by it. torch.multiprocessing.spawn says
    // "process N terminated with signal SIGNAME"; Open MPI's mpirun (Horovod,
    // Caffe2) "process rank N with PID P on node H exited on signal 6
    // (Aborted)"; a shell's or a launcher's exit status 128 + 6, 7 or 11
    // (134, 135, 139). An abort that follows an uncaught C++ exception whose
    // message names a cause is that exception's echo (see ExplainLog).
    {"rank_crashed",
     R"(exitcode\s*:\s*-(6|7|11)\b|Signal (6|7|11) \((SIGABRT|SIGBUS|SIGSEGV)\) received|<Signals\.SIG(ABRT|BUS|SEGV): (6|7|11)>|terminated with signal SIG(ABRT|BUS|SEGV)\b|exited on signal (?:6|7|11) \(|\bexit(?:ed)?(?: with)?(?: ?status)?(?: ?code)?:? ?(?:134|135|139)\b|\bexits with return code = -(?:6|7|11)\b|Segmentation fault|core dumped|Bus error|Fatal Python error: Aborted|Unexpected bus error encountered in worker|The actor died unexpectedly before finishing this task|A worker died or was killed while executing a task by an unexpected system error)",
     S::kError, St::kProcess,
     "A rank's process crashed (abort, segmentation fault, or bus error); the others failed "
     "because it went away.",
     "Read that rank's log above the crash (its first error or C++ exception); a core dump or "
     "`faulthandler` shows where. A bus error in a container is most often /dev/shm too small "
     "(docker run --shm-size, a Kubernetes emptyDir with medium: Memory)."},
    // c10's CUDACachingAllocator: "CUDA out of memory. Tried to allocate
    // 2.00 GiB. GPU 0 has a total capacity of ..." raised as RuntimeError
    // (1.x), torch.cuda.OutOfMemoryError (2.0+), torch.OutOfMemoryError
    // (2.5+); CUDA's own "CUDA error: out of memory"; alloc_cpu.cpp's
    // "DefaultCPUAllocator: can't allocate memory: you tried to allocate N
    // bytes". The exception's own line only: frameworks that catch it and
    // skip the batch log it in their own words ("ran out of memory with
    // exception: CUDA out of memory").
    {"rank_out_of_memory",
     R"((?:OutOfMemoryError|RuntimeError): CUDA out of memory\. Tried to allocate ([\d.]+ ?[KMGT]?i?B)|(?:OutOfMemoryError|RuntimeError): CUDA error: out of memory|DefaultCPUAllocator: can't allocate memory: you tried to allocate (\d+) bytes)",
     S::kError, St::kProcess,
     "A rank ran out of GPU (or host) memory and raised; it exited, so the other ranks' "
     "collectives failed or timed out waiting for it: those are its echo.",
     "Reduce the batch size or sequence length, use activation checkpointing or sharding "
     "(FSDP, ZeRO); PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation; "
     "check no other process holds that GPU (`nvidia-smi`).",
     R"(tried to allocate \1 on the GPU|tried to allocate \2 bytes of host memory)"},
    // SIGTERM (15) on a rank: torch elastic's agent stops the surviving ranks
    // with it once one failed (api.py "Sending process N closing signal
    // SIGTERM"), and a scheduler stopping the job sends it to every process.
    // The kill is not the fault, so it is of the last stage: the root only
    // when nothing else in the logs failed. Its error report, the agent's
    // "failed (exitcode: -15) local_rank: N (pid: P)", or ChildFailedError's
    // "Signal 15 (SIGTERM) received by PID P"; mp.spawn's "process N
    // terminated with signal SIGTERM"; 143 = 128 + 15.
    {"rank_terminated",
     R"(failed \(exitcode: -15\) local_rank: (\d+) \(pid: (\d+)\)|exitcode\s*:\s*-15\b|Signal 15 \(SIGTERM\) received by PID (\d+)|<Signals\.SIGTERM: 15>|process (\d+) terminated with signal SIGTERM|\bexit(?:ed)?(?: with)? (?:status code|code|status)[: ]+143\b|\bexits with return code = -15\b|\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+(?: DUE TO (TIME LIMIT|PREEMPTION|NODE FAILURE))?)",
     S::kError, St::kAftermath,
     "A rank was stopped with SIGTERM. Most often torch elastic's agent stopping the surviving "
     "ranks after another rank failed (that failure, in this or another rank's log, is the "
     "cause); otherwise the job was stopped from outside: a scheduler's time limit or "
     "preemption (Slurm, Kubernetes), scancel, a pod deletion.",
     "Look for the first rank that failed before the SIGTERMs (a killed or crashed rank, an "
     "exception with exit code 1); if there is none, check the scheduler's record of the job "
     "(`sacct -j JOB`, `kubectl describe pod`) for a time limit, preemption or eviction.",
     R"(local rank \1 (pid \2) stopped by SIGTERM|pid \3 stopped by SIGTERM|rank \4 stopped by SIGTERM|Slurm cancelled the job: \5)"},
    // torch elastic's agent, "failed (exitcode: 1) local_rank: N (pid: P)",
    // ChildFailedError's "exitcode  : 1 (pid: P)", mp.spawn's "process N
    // terminated with exit code 1": a rank raised (its traceback has the
    // exception). After the failures that explain it, before the SIGTERMs
    // the agent then sends the others (ChildFailedError lists those first).
    // torch elastic 1.9's "CHILD PROCESS FAILED WITH NO ERROR_FILE" banner
    // (errors/__init__.py's _no_error_file_warning_msg) names the child as
    // "Child process PID (local_rank R) FAILED (exitcode N)" and "Error msg:
    // Process failed with exitcode N"; a signal's code is negative there and
    // its "Error msg: Signal 9 (SIGKILL) received by PID" is the kill's.
    {"rank_exited",
     R"(failed \(exitcode: ([1-9]\d*)\) local_rank: (\d+) \(pid: (\d+)\)|\bexitcode\s*:\s*([1-9]\d*) \(pid: (\d+)\)|process (\d+) terminated with exit code ([1-9]\d*)|\bexits with return code = ([1-9]\d*)|\btask \d+: Exited with exit code ([1-9]\d*)|\bProcess \d+ exit with status code [1-9]\d{0,2}\.|detected that one or more processes exited with non-zero status|has exited due to process rank \d+ with PID|\bworker \d+ failed with exit code : [1-9]|HorovodInternalError: Horovod has been shut down|\bChild process \d+ \(local_rank \d+\) FAILED \(exitcode [1-9]\d*\)|\bError msg: Process failed with exitcode [1-9]\d*)",
     S::kError, St::kExited,
     "A rank exited with an error code: it raised a Python exception (its traceback, in this "
     "log above or in that rank's own log, names it). torch elastic then stops the other ranks.",
     "Read the exception of the rank named (the first one in ChildFailedError's \"Root Cause\" "
     "section); with torchrun, decorate the entry point with "
     "torch.distributed.elastic.multiprocessing.errors.record to get its traceback in the "
     "report.",
     R"(local rank \2 (pid \3) exited with code \1|pid \5 exited with code \4|process \6 exited with code \7|a rank exited with code \8|a task exited with code \9)"},
    // device.cc's GLOO_ENFORCE_EQ since 2023; before, pair.cc's connect threw
    // "address family mismatch".
    {"address_family_mismatch",
     R"(ss1\.ss_family == ss2\.ss_family\. (\d+) vs (\d+)|\baddress family mismatch\b)", S::kError,
     St::kSetup,
     "The ranks' Gloo addresses are of different families (IPv4 on one host, IPv6 on another): "
     "each host resolved its name or interface differently, and Gloo cannot pair them.",
     "Make every host resolve to the same family: GLOO_SOCKET_IFNAME naming an interface with an "
     "IPv4 address on every host, or /etc/hosts mapping each host name to its IPv4 address "
     "(Gloo takes getaddrinfo's first answer). `gloowatch diagnose` shows each host's choice.",
     R"(address families \1 vs \2 (2 = IPv4, 10 = IPv6))"},
    // The algorithms' GLOO_ENFORCE on context->getPair(rank): "missing
    // connection between rank R (this process) and rank P", the ring's "and
    // previous/next ring rank P".
    {"pair_missing",
     R"(missing connection between rank (\d+)(?: \(this ?process\))? and (?:previous ring |next ring )?rank (\d+)|pair missing \(index (\d+)\)|Cannot connect to self)",
     S::kError, St::kSetup,
     "A Gloo collective needs a pair to a rank its context never connected. With the same rank "
     "on both sides, a collective in a world of one process, which Gloo before 2019 could not "
     "run; otherwise a context whose full mesh was not set up with that rank.",
     "Upgrade PyTorch (its Gloo runs collectives with world_size 1) or skip the collective when "
     "world_size is 1; for two different ranks, check that every rank created the same process "
     "groups in the same order.",
     R"(rank \1 has no pair to rank \2)"},
    {"collective_mismatch",
     // ProcessGroupWrapper (TORCH_DISTRIBUTED_DEBUG=DETAIL): "Rank A is running
     // collective: CollectiveFingerPrint(SequenceNumber=N, OpType=OP, ...), but
     // Rank B is running collective: ...", since 2.1 followed by "Collectives
     // differ in the following aspects: ...".
     R"(op\.preamble\.length <= op\.nbytes\. (\d+) vs (\d+)|Received data size doesn't match expected size|Detected mismatch between collectives on ranks\. Rank (\d+) is running (?:inconsistent )?collective: CollectiveFingerPrint\((?:SequenceNumber=\d+,? ?)?OpType=(\w+)(?:.*?but Rank (\d+) is running collective: CollectiveFingerPrint\((?:SequenceNumber=\d+,? ?)?OpType=(\w+))?(?:.*?Collectives differ in the following aspects: *(.+))?|Detected mismatch between collectives|[Mm]ismatch between collective|Collectives differ in the following aspects)",
     S::kError, St::kSetup,
     "Ranks issued different collectives (or different tensor sizes) in the same slot.",
     "Make every rank call the same collectives in the same order with the same shapes; run "
     "with TORCH_DISTRIBUTED_DEBUG=DETAIL to see which rank diverged.",
     R"(received \1 bytes for a \2-byte buffer|rank \3 ran \4, rank \5 ran \6; they differ in: \7|rank \3 ran \4, rank \5 ran \6|rank \3 ran \4)"},
    // distributed_c10d.py's and ProcessGroupGloo's argument checks: the call
    // itself is wrong on this rank (a root outside the group, tensors of
    // different dtypes or sizes in one list, splits that do not add up), so
    // no rank or network is to blame. Before backend_mismatch, whose device
    // and layout checks share the "ProcessGroupGloo::op:" prefix.
    {"collective_bad_argument",
     R"(invalid root rank: (-?\d+)|invalid tensor (?:type|size) at index (\d+)|invalid output size: \(expected length|tensors must all be on the same device|input tensor has to be (?:contiguous|dense)|ProcessGroupGloo::send takes a single tensor|Tensor's dim 0 does not divide equally across group size|Number of tensor splits not equal to group size|Split sizes doesn't match total dim 0 size|Length or offset larger than INT_MAX|Tag must be nonnegative|Cannot use ReduceOp\.B(?:AND|OR|XOR) with non-integral dtype|Work needs to be completed before calling result|trying to initialize the default process group twice|GLOO options not supported|The specified group name has already been created|is not registered, please create group with torch\.distributed\.new_group|(?:Global|Group) rank -?\d+ is not part of group|the new group's world size should be less|The new group's rank should be within|Argument ``(?:gather|scatter)_list`` must|does not support ReduceOp\.\w+ on complex tensors|Invalid function argument\. Expected parameter|Invalid usage of tensors with different dtypes|All ops need to use the same group|The world size must be divisible by 'group_size'|Rendezvous handler for \S+ already registered)",
     S::kError, St::kSetup,
     "A collective or group call was given arguments its backend rejects on this rank: a root or "
     "rank outside the group, tensors of different dtypes, sizes or devices in one call, splits "
     "that do not add up to the tensor, or a process group initialised twice.",
     "Fix the call the traceback points at (print the group's ranks and the tensors' dtype and "
     "shape on every rank); a src/dst must be a rank of the group passed with it.",
     R"(root rank \1 is not in the group|tensor \2 of the list differs from the first)"},
    {"backend_mismatch",
     R"(ProcessGroupGloo does not support|Backend \S+ does not (support|implement)|ProcessGroup \w+ does not support|No backend type associated with device type|Tensors must be CUDA and dense|ProcessGroupGloo::\S+: unsupported (device|layout)|Cannot use ReduceOp\.(?:AVG|PREMUL_SUM) with Gloo|no support for _allgather_base in Gloo|monitored_barrier is only implemented for GLOO|Function argument device_ids not supported for the selected backend|allreduce of sparse tensors only works with ReduceOp\.SUM|watchKey only implemented for|Subgroups can only be created when CUDA is available|(?:underlying|this) store doesn't support)",
     S::kError, St::kSetup,
     "The op or the tensors' device is not one this process group's backend serves: Gloo runs "
     "CPU collectives (and only some on CUDA); NCCL only CUDA tensors.",
     "Give each device its backend: init_process_group(backend=\"cpu:gloo,cuda:nccl\") (PyTorch "
     ">= 2.0), or a separate new_group(backend=\"gloo\") for CPU tensors, or move the tensors; "
     "check the op against the backend table in the torch.distributed docs."},
    // A backend this build or launcher lacks: PyTorch without MPI (pip and
    // conda wheels), a misspelt backend name, Horovod installed without its
    // Gloo or MPI controller, Gloo's tools built without a rendezvous store
    // (USE_REDIS, USE_MPI). Found before anything is connected.
    {"backend_not_built",
     R"(Distributed package doesn't have MPI built in|Unknown c10d backend type (\w+)|Invalid backend: '([^']*)'|TCP backend has been deprecated|(?:Gloo|MPI) support (?:is required to use elastic training, but )?has not been built|Neither MPI nor Gloo support has been built|Failed to determine if Gloo support has been built|horovod does not find an installed MPI|module 'torch\.distributed' has no attribute '(?:init_process_group|new_group|all_reduce|barrier|is_initialized)'|(?:^|\W)RuntimeError: Invalid backend\s*$|contextFactory_\. No means for rendezvous)",
     S::kError, St::kSetup,
     "The job asked for a communication backend this installation does not have: PyTorch's "
     "wheels are built without MPI, the backend name is misspelt, or Horovod was installed "
     "without its Gloo (CMake) or MPI controller.",
     "Use a backend the build has (gloo, nccl; `torch.distributed.is_mpi_available()` says), or "
     "reinstall with it: Horovod with HOROVOD_WITH_GLOO=1 / HOROVOD_WITH_MPI=1 and "
     "--no-cache-dir (check `horovodrun --check-build`); PyTorch from source on a host with "
     "MPI for backend=\"mpi\".",
     R"(backend \1 is not registered in this build|backend '\2' is unknown)"},
    // distributed_c10d.py's _get_default_group: a collective, DDP or
    // get_rank() before init_process_group (or after destroy_process_group).
    // The exception's line, not a traceback's source line that raises it.
    {"process_group_not_initialized",
     R"(Error: Default process group (?:has not been|is not) initialized)",
     S::kError, St::kSetup,
     "torch.distributed was used before init_process_group (or after destroy_process_group): "
     "the script took its distributed path without starting the process group, often because "
     "it was started with plain python instead of its launcher.",
     "Start it the way it expects (torchrun / the framework's launcher, which set RANK, "
     "WORLD_SIZE, MASTER_ADDR), or call torch.distributed.init_process_group() before DDP, "
     "samplers or collectives; check the script's flag that turns distributed mode on."},
    // reducer.cpp: DDP's backward found parameters that got no gradient.
    {"ddp_unused_parameters",
     R"(Expected to have finished reduction in the prior iteration before starting a new one)",
     S::kError, St::kSetup,
     "DistributedDataParallel found parameters that took no part in the loss (or the forward "
     "outputs were not all used), so its gradient reduction never finished.",
     "Pass find_unused_parameters=True to DistributedDataParallel, or make every parameter "
     "take part in the loss on every rank; TORCH_DISTRIBUTED_DEBUG=DETAIL names the "
     "parameters."},
    // reducer.cpp: DDP used in a way it does not support (its hooks fired
    // twice for one parameter: reentrant checkpointing, shared parameters).
    {"ddp_usage_error",
     R"(Expected to mark a variable ready only once|has been marked as ready twice|set_static_graph\(\) should be called before training loop|(?:register_comm_hook|register_builtin_comm_hook) or \w+ can only be called once)",
     S::kError, St::kSetup,
     "DistributedDataParallel's gradient hooks fired in a way it does not support: a parameter "
     "used twice in one backward (reentrant activation checkpointing, a module shared between "
     "branches), or DDP configured after training started.",
     "Use non-reentrant checkpointing (use_reentrant=False) or static_graph=True when the graph "
     "does not change; TORCH_DISTRIBUTED_DEBUG=DETAIL names the parameter."},
    // comm.cpp's verify_params_across_processes, at DDP's construction.
    {"ddp_model_mismatch",
     R"(DDP expects same model across all ranks, but Rank (\d+) has (\d+) params, while rank (\d+) has inconsistent (\d+) params|appears not to match (?:sizes|strides) of the same param in process 0)",
     S::kError, St::kSetup,
     "The ranks built different models (a different number of parameters), so DDP cannot pair "
     "their gradients: configuration, code or checkpoint differs between them.",
     "Make every rank build the same model: same code version, config and checkpoint on every "
     "host; look for rank-dependent branches in model construction.",
     R"(rank \1 has \2 parameters, rank \3 has \4)"},
    // distributed_c10d.py: the NCCL backend on a build without it (Windows,
    // macOS, CPU-only) or a host without GPUs. The exception's line (or the
    // message alone, as interleaved output splits it), not the raise.
    {"nccl_unavailable",
     R"((?:^\s*|Error: )Distributed package doesn't have NCCL built in|ProcessGroupNCCL is only supported with GPUs, no GPUs found)",
     S::kError, St::kSetup,
     "The job asked for the NCCL backend where there is none: Windows and macOS builds of "
     "PyTorch (and CPU-only ones) have only Gloo, and NCCL needs a GPU.",
     "Use backend=\"gloo\" (or the script's option for it), or run on a CUDA build of PyTorch "
     "on hosts with GPUs."},
    // TCPStore.cpp: TCPStore(use_libuv=True), the default of torchrun and
    // env:// since 2.4, on a build without libuv (Windows wheels).
    {"store_libuv_missing", R"(use_libuv was requested but PyTorch was buil[dt] without libuv)",
     S::kError, St::kSetup,
     "The c10d store was asked for its libuv server, which this PyTorch build lacks (the "
     "Windows builds of 2.4 and later).",
     "Set USE_LIBUV=0 in the environment of the launcher and the ranks (or add ?use_libuv=0 to "
     "init_method), or use a PyTorch build with libuv."},
    // TCPStore.cpp: the store's reply was not the one the protocol expects;
    // since 2.4 the client's ping after connecting checks an echoed number
    // ("Ping failed, invalid value returned from server. Expected: N, Got: M",
    // inside "TCP client failed to connect/validate to host H:P - retrying").
    {"store_protocol_mismatch",
     R"(Stop_waiting response is expected|wait_canceled response is expected|ready or not_ready response expected|Ping failed, invalid value returned from server\. Expected: (\d+), Got: (\d+)|Unexpected query type|Invalid magic number|Invalid (?:string|payload) size\. size: \d+|RendezvousStateError: The (?:state object|rendezvous state) is corrupt)",
     S::kError, St::kSetup,
     "The reply on MASTER_PORT is not what this rank's c10d store client expects: another "
     "program or another job's store listens on that port, or the ranks run different PyTorch "
     "versions.",
     "Pick a free MASTER_PORT (`ss -ltnp sport = :PORT` on MASTER_ADDR), stop stale jobs, and "
     "install the same torch build on every host.",
     // A foreign listener answers the same way on every retry.
     R"(the store echoed \2 to the ping \1)", nullptr, nullptr, false},
    // EMFILE anywhere: Gloo's accept/socket/pipe (GLOO_ENFORCE "accept: Too
    // many open files"), c10d's sockets, DataLoader's fd sharing.
    {"too_many_open_files", R"(Too many open files|Failed to create the control pipe to start the BackgroundThread)", S::kError, St::kSetup,
     "A process ran out of file descriptors: each Gloo process group keeps sockets to every "
     "other rank, and DataLoader workers pass tensors through file descriptors.",
     "Raise the limit (`ulimit -n`, LimitNOFILE in systemd, the container runtime's nofile); "
     "for DataLoader, torch.multiprocessing.set_sharing_strategy('file_system')."},
    // GlooDeviceFactory.cpp / Gloo's ibverbs device: no device Gloo can
    // create from what it was given (an empty GLOO_SOCKET_IFNAME or host
    // name, a GLOO_DEVICE_TRANSPORT this build lacks, no HCA).
    {"gloo_device_unconfigured",
     R"(GlooDeviceFactory::make(\w+)Device\(\): interface or hostname can't be empty|makeDeviceFor(?:Interface|Hostname)\(\): unsupported gloo device|No device\(s\) specified|No ibverbs devices present|Unable to find device named: (\S+)|ibv_query_port: |Device not set!)",
     S::kError, St::kSetup,
     "Gloo could not create its transport device: it was given neither an interface nor a host "
     "name (GLOO_SOCKET_IFNAME set but empty, or the host name empty, which Windows and some "
     "containers produce), GLOO_DEVICE_TRANSPORT names a transport this build lacks, or the "
     "InfiniBand device asked for is not there.",
     "Unset an empty GLOO_SOCKET_IFNAME or set it to a real interface (`ip -br addr`; on Windows "
     "the adapter's name); unset GLOO_DEVICE_TRANSPORT unless this build has it (TCP on Linux, "
     "UV on macOS and Windows).",
     R"(the \1 device got no interface or host name|no ibverbs device \2)"},
    // Gloo's device.cc: "rp != nullptr" is getaddrinfo on a host name that
    // failed; "ifa != nullptr" (below) an interface that is not there. Since
    // 2025 (pytorch/gloo#434) device.cc checks getaddrinfo's own return,
    // GLOO_ENFORCE_EQ(rv, 0): "rv == 0. -2 vs 0", EAI_NONAME (-2), EAI_AGAIN
    // (-3), EAI_FAIL (-4), EAI_NODATA (-5), without the name.
    {"hostname_unresolvable",
     R"(rp != nullptr\. Unable to find address for:? *(\S+)|device\.cc:\d+\] rv == 0\. (-[2-5]) vs 0|Cannot resolve (\S+) to a \(local\) address)",
     S::kError, St::kSetup,
     "The host name Gloo was given (the machine's own name, or MASTER_ADDR's) does not resolve "
     "on this host, so Gloo cannot pick an address to bind.",
     "Make the name resolve on every host (DNS or /etc/hosts, to the training-network address), "
     "or set GLOO_SOCKET_IFNAME so Gloo uses an interface instead of the name.",
     R"(host \1|getaddrinfo error \2 (-2 name unknown, -3 DNS temporarily failing)|host \3)"},
    // device.cc since 2019: getaddrinfo answered, but bind(2) on every
    // answer failed, so the name is not this host's.
    {"hostname_not_local",
     R"(Unable to find address for (\S+?); bind\(2\) for (\S+) failed with: (.+))", S::kError,
     St::kSetup,
     "The host name resolves, but to an address Gloo cannot bind on this host: the name maps to "
     "another machine's or a stale address (/etc/hosts, DNS), or that address is not configured "
     "here.",
     "Make the host name resolve to an address of this host on the training network (`getent "
     "hosts $(hostname)` against `ip -br addr`), or set GLOO_SOCKET_IFNAME so Gloo uses an "
     "interface instead of the name.",
     R"(host \1 resolves to \2, which does not bind here: \3)"},
    {"version_mismatch", R"(sizeof\(impl_\) == bytes\.size\(\)\. (\d+) vs (\d+)|Remaining bytes do not map to entire chunk of pair identifiers)", S::kError,
     St::kSetup,
     "The ranks exchanged Gloo addresses of different sizes: they run different Gloo builds "
     "(different PyTorch versions on the hosts).",
     "Install the same torch build on every host (`python -c 'import torch; "
     "print(torch.__version__)'` on each).",
     R"(address sizes \1 vs \2 bytes)"},
    {"bad_interface_nccl_syntax", R"(Unable to find address for:? *\^)", S::kError, St::kSetup,
     "GLOO_SOCKET_IFNAME uses NCCL's '^' exclusion syntax, which Gloo does not support.",
     "Set GLOO_SOCKET_IFNAME to interface names (comma-separated, e.g. eth0 or eth0,eth1)."},
    {"bad_interface", R"(Unable to find address for:? *(\S+)|Unable to find a set of common task-to-task communication interfaces|NoValidAddressesFound|No interface is found for address|Cannot find an IPv4 address of the common interface|\bfalse\. Unknown ai_family: \d+)", S::kError, St::kSetup,
     "GLOO_SOCKET_IFNAME names an interface that does not exist here or has no address.",
     "Use an interface listed by `ip -br addr` that has an address on the training network, "
     "same name on every host (or set it per host).",
     R"(interface \1)"},
    // An all-digit host name ("189") parses as an IPv4 address (0.0.0.189),
    // which getaddrinfo returns without asking DNS.
    {"bad_address", R"(Unable to find interface for:? *(?:\[(0\.0\.\d+\.\d+)\]|(\S+))|\bbind: Cannot assign requested address|what\(\):\s*Invalid IP address|Error connecting to \S+: address not available|OSError: \[Errno (?:99|49)\] (?:Cannot|Can't) assign requested address|\buv_bind: address not available)",
     S::kError, St::kSetup,
     "The address Gloo was told to bind to is not configured on any local interface.",
     "Bind to an address of this host (`ip -br addr`), or use GLOO_SOCKET_IFNAME. An address "
     "0.0.x.y is an all-digit host name read as an IPv4 address: rename the host, or set "
     "GLOO_SOCKET_IFNAME (or MASTER_ADDR to a real address).",
     R"(address \1 (an all-digit host name read as IPv4)|address \2)"},
    // rendezvous.py: init_method's scheme is not a registered handler
    // ("RuntimeError: No rendezvous handler for {scheme}://").
    // A scheme's characters only (RFC 3986), so that the traceback's source
    // line, "... for {}://".format(...), is not taken for the error.
    // tcp://HOST:PORT is split by CPython's urllib, whose port property
    // raises for a port that is not a number (an unexpanded variable, an
    // object's repr) or out of range, before any store is made. Before 3.6
    // it was int(port, 10)'s own ValueError; a literal holding a colon and
    // a port is an address left where a port goes (an unbracketed IPv6
    // host, HOST:PORT in MASTER_PORT), not any other int() of a script.
    {"bad_init_method",
     R"(No rendezvous handler for ([A-Za-z0-9+.-]*)://|ValueError: Port could not be cast to integer value as ('[^']*'|"[^"]*"|\S+)|ValueError: Port out of range 0-65535|ValueError: invalid literal for int\(\) with base 10: ('[^']*:\d+')\s*$)",
     S::kError, St::kSetup,
     "init_method (or dist_url) names a rendezvous scheme torch.distributed does not know: a typo, "
     "an empty or unexpanded URL, or a store scheme this PyTorch build lacks.",
     "Use tcp://HOST:PORT, file:///PATH or env:// (with MASTER_ADDR/MASTER_PORT set); print the "
     "URL the script passes to init_process_group.",
     R"(scheme '\1://'|port \2 is not a number|port out of range 0-65535|port \3 is an address and a port)"},
    // rendezvous.py: "Error initializing torch.distributed using " and the
    // handler's complaint: env:// "environment variable VAR expected, but not
    // set", tcp:// and file:// "rank parameter missing", "port number missing".
    {"init_method_incomplete",
     R"(Error initializing torch\.distributed using (\w+):// rendezvous: (?:environment variable (\w+) expected, but not set|(.+))|\bopen\([^)]*\): No such file or directory|\bflock: Function not implemented|File cannot be created: (\S+))",
     S::kError, St::kSetup,
     "init_process_group's rendezvous lacks a value it needs: env:// reads MASTER_ADDR, "
     "MASTER_PORT, RANK and WORLD_SIZE from the environment, which a launcher (torchrun, "
     "Slurm, a Kubernetes operator) sets; the script was started without one.",
     "Start the script through torchrun (or the job's launcher), or set the variable it names / "
     "pass rank= and world_size= to init_process_group.",
     R"(\1:// needs \2|\1://: \3)"},
    // The launchers' own checks of their arguments and endpoints (torchrun,
    // torch.distributed.launch, torch elastic's rendezvous parameters, Horovod,
    // DeepSpeed's hostfile, mpirun, Lightning, vLLM): the job never started,
    // so nothing else in the log is its cause.
    {"launcher_bad_argument",
     R"(Unsupported nproc_per_node value: (\S+)|\b[\w.-]+: error: (?:unrecognized arguments: (.+)|argument (\S+): invalid \w+ value: '([^']*)'|the following arguments are required: (.+)|argument \S+: expected one argument)|nnodes=\S+ is not in "MIN:MAX" format|ValueError: Cuda is not available\.|Don't use both the '--no_python' flag|When using the '--no_python' flag, you must also set|Endpoint is missing in endpoint|port is missing in endpoint|The port number of the rendezvous endpoint '([^']*)' must be an integer|The hostname of the rendezvous endpoint '([^']*)' must be|The rendezvous configuration (?:string must be in format|option '[^']*' (?:must have a value|does not represent a valid))|The (?:minimum|maximum) number of (?:rendezvous )?nodes \(\d+\) must be|The rendezvous backend (?:name must be a non-empty string|'[^']*' is not registered|'[^']*' does not match the requested)|Invalid store type given\.|The read timeout must be a positive integer|The run id must be a non-empty string|requires rdzv_endpoint to be set|The \w+ timeout \([^)]*\) must be positive|rank is absent in RendezvousParameters|endpoint is absent in RendezvousParameters|Port is absent in endpoint|port must have value from 0 to 65535 but was|`(?:url|rank|world_size)` must be (?:a string|an integer)|Backend name must be a string, but got|Expected timeout argument to be of type|server_port must be specified when world_size|listen fd \d+ is bound to port|The value of TORCH_DISTRIBUTED_DEBUG must be|does not match: <|Cannot run in fault tolerance mode with fewer than 2 hosts|One of --host-discovery-script, --hosts, or --hostnames must be provided|Invalid host input, please make sure it has format|Hostfile contains (?:a bad entry|multiple entries)|mpirun was unable to (?:launch the specified application|find the specified executable)|mpirun has detected an attempt to run as root|Lightning can't create new processes if CUDA is already initialized|must be divisible by tensor parallel size|The etcd protocol must be HTTP or HTTPS|\] rank < size\. \d+ vs \d+|timeout\.count\(\) >= 0\. Invalid timeout)",
     S::kError, St::kSetup,
     "The launcher or the rendezvous rejected its own arguments before any rank started: a value "
     "that is not a number (--nproc_per_node from an unset variable, SLURM_TASKS_PER_NODE like "
     "4(x2)), an endpoint without a host or port, a flag this version does not know (torchrun "
     "before 2.0 has no --nproc-per-node), a malformed hostfile or rendezvous option.",
     "Print the launch command as the shell expands it (`set -x`) and compare it with "
     "`torchrun --help` of the installed version; give every value explicitly (--nproc_per_node "
     "N, --rdzv_endpoint HOST:PORT, --master_addr/--master_port for the static backend).",
     R"(nproc_per_node '\1' is not a number of processes|unknown argument \2|argument \3 got '\4'|missing arguments: \5|rendezvous endpoint '\6' has no valid port|rendezvous endpoint '\7' has no valid host)"},
    // mpirun's, horovodrun's, Slurm's and vLLM's placement checks: more
    // processes (or GPUs) asked for than the hosts offer.
    {"not_enough_slots",
     R"(not enough slots available in the system|Your job failed to map\.|A sequential map was requested, but not enough node entries|Requested more processes \((\d+)\) than there are available slots \((\d+)\)|Process number should not be larger than total available slots|More processors requested than permitted|required GPUs exceeds the total number of available GPUs|Ray does not allocate any GPUs on the driver node)",
     S::kError, St::kSetup,
     "The launcher was asked for more processes (or GPUs) than the hosts it was given offer: "
     "mpirun counts one slot per core unless the host list says otherwise, horovodrun's -H "
     "host:N gives N slots, Ray's placement group holds fewer GPUs than the parallel sizes need.",
     "Give each host its slot count (`-H host:4`, a hostfile's `slots=4`, mpirun --oversubscribe "
     "for testing), lower -np / the parallel sizes, or add nodes; for Ray, check `ray status` "
     "shows the GPUs on every node.",
     R"(\1 processes requested, \2 slots)"},
    // horovodrun checks ssh to every host first, then starts a task server
    // on each that must register with its driver (and probe the others)
    // within --start-timeout: its Timeout names what it waited for, and the
    // task function fails with it. ssh worked; the hosts cannot reach each
    // other on the interfaces tried.
    {"launcher_hosts_unreachable",
     R"(Timed out waiting for ([\w -]+?)\. Please check connectivity between servers|Launching horovod(?:run)? task function was not successful)",
     S::kError, St::kConnect,
     "The launcher's task servers started on the other hosts (its ssh worked) but never reached "
     "its driver, or each other, in time: a firewall or security group between the hosts, an "
     "interface that only one host has (Docker's bridge, a VPN) tried first, or more hosts than "
     "--start-timeout allows for.",
     "Check every host can open TCP connections to the launching host and to each other (not "
     "only ssh's port 22); name the shared interface (horovodrun --network-interface, "
     "NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME); raise --start-timeout for many hosts.",
     R"(waited for \1)"},
    // A launcher that starts remote ranks over ssh (mpirun, horovodrun,
    // DeepSpeed's pdsh) could not reach a host: no rank there ever started.
    {"launcher_ssh_failed",
     R"(host=(\S+) was not reachable via ssh|could not connect to some hosts via ssh|ssh not successful for host (\S+?):|ssh: connect to host (\S+) port \d+: |ssh: Could not resolve hostname (\S+?):|Permission denied \(publickey|Host key verification failed|ssh exited with exit code 255|(?:ORTE|PRTE) was unable to reliably start one or more daemons)",
     S::kError, St::kSetup,
     "The launcher could not start the ranks on another host: its ssh to that host failed (no "
     "passwordless key, host key not accepted, sshd not listening, the name does not resolve), "
     "or the remote command could not run there (Open MPI or Python not on that host's PATH).",
     "Check `ssh -o BatchMode=yes HOST hostname` from the launching host to every host in the "
     "hostfile works without a prompt; install the same environment on every host (mpirun "
     "--prefix, an absolute python path).",
     R"(host \1 not reachable over ssh|host \2 not reachable over ssh|ssh to \3 failed|ssh cannot resolve \4)"},
    // ProcessGroupGloo's createDefaultDevice (TORCH_WARN_ONCE): the rank then
    // advertises 127.0.0.1, so the full mesh that fails after it is its echo.
    {"loopback_fallback",
     R"(Unable to resolve hostname to a \(local\) address|Using the loopback address as fallback|Manually set the network interface to bind to with GLOO_SOCKET_IFNAME|Failed to get the IP address, using 0\.0\.0\.0 by default)",
     S::kWarning, St::kSetup,
     "The host name resolves to a loopback address, so Gloo bound to 127.0.0.1: harmless when "
     "every rank runs on this host, fatal for ranks on other hosts (they cannot connect).",
     "For a multi-host job set GLOO_SOCKET_IFNAME to the training interface on every host (a "
     "launcher's workers, such as Ray's, do not inherit the head's shell), or fix /etc/hosts so "
     "the host name resolves to a routable address.",
     nullptr, nullptr,
     "connect_full_mesh loopback_refused pair_connect_timeout pair_connect_refused", true,
     true},
    // socket.cpp's bind with EACCES (errno 13; libuv's EACCES; Windows'
    // WSAEACCES 10013, a port in a range the system reserved): the port is
    // privileged or a policy forbids it, so no waiting or stale job is involved.
    {"store_port_denied",
     R"(failed to bind to \S*:(\d+) \(errno: 13\b|name: EACCES\b|system error: 10013\b)",
     S::kError, St::kSetup,
     "The rendezvous store may not listen on MASTER_PORT: permission denied. Ports below 1024 "
     "need root (CAP_NET_BIND_SERVICE); on Windows the port lies in a range the system "
     "reserved; otherwise a security policy (SELinux, a container's profile) forbids it.",
     "Pick a MASTER_PORT of 1024 or above that no policy reserves (torchrun's default is "
     "29500; `netsh interface ipv4 show excludedportrange protocol=tcp` on Windows).",
     R"(port \1 denied)"},
    // torch elastic's create_c10d_store retries a port in use a few times:
    // each attempt is a warning, the last one raises store_port_in_use.
    {"store_port_retry", R"(port: (\d+) already in use, attempt: \[\d+/\d+\])", S::kWarning,
     St::kSetup,
     "The port chosen for the rendezvous store was taken; torch elastic retries. Harmless when "
     "a later attempt succeeds.",
     "If every attempt fails, pick a free port (`ss -ltnp sport = :PORT`) or stop the job "
     "holding it.",
     R"(port \1 taken, retrying)"},
    {"store_port_in_use",
     R"(failed to bind to .*(Address already in use|errno: (?:98|48)\b|system error: 10048\b)|EADDRINUSE|server socket has failed to (listen|bind)|RuntimeError: Address already in use( at |\s*$)|server could not be initialized on any address for port|Failed to listen on socket initialized from fd \d+: .*Address already in use|\bon \S+, port: \d+ already in use|Unable to find a port to bind to|OSError: \[(?:Errno (?:98|48)|WinError 10048)\])",
     S::kError, St::kSetup,
     "MASTER_PORT is already in use on the rank 0 host (a stale job, or two jobs on one port).",
     "Pick a free MASTER_PORT or stop the stale process (`ss -ltnp sport = :PORT`)."},
    // pair.cc's bind or listen on its ephemeral port, GLOO_ENFORCE'd with
    // strerror ("[gloo/transport/tcp/pair.cc:185] listen: Address already in use").
    {"pair_bind_in_use", R"(\b(?:bind|listen): Address already in use|Error on listener socket: address already in use|\buv_(?:bind|listen): address already in use)", S::kError, St::kSetup,
     "A Gloo pair could not bind its listening socket: the address/port is taken (a fixed port "
     "range exhausted, or another process on it).",
     "Check net.ipv4.ip_local_port_range and what holds the ports (`ss -ltnp`); stale training "
     "processes on this host are the usual holders."},
    // Gloo's ibverbs transport cannot register its buffers: RDMA needs
    // locked memory (ulimit -l), GPU memory needs GPUDirect (nv_peer_mem).
    {"ibverbs_memlock",
     R"(ibv_reg_mr: .*(?:locked memory limit|nv_peer_mem)|ibv_create_cq failed: Cannot allocate memory)",
     S::kError, St::kSetup,
     "Gloo's InfiniBand transport could not register memory with the HCA: the locked-memory limit "
     "is too low, or a GPU buffer was given without GPUDirect RDMA (nv_peer_mem / nvidia-peermem).",
     "Raise the limit (`ulimit -l unlimited`, LimitMEMLOCK in systemd, the container's "
     "--ulimit memlock=-1) and load nvidia-peermem for GPU buffers, or use the TCP transport."},
    // A socket call that failed on this host itself, not on the network: no
    // descriptor, buffer or permission for it (the descriptor limit has its
    // own signature, before this one).
    {"local_socket_error",
     R"(The socket cannot be switched to (?:non-)?blocking mode|The port number of the socket cannot be retrieved|The socket is not initialized\.|The initialization of Winsock has failed|Unexpected poll revent on the master's listening socket|UV Store addr parsing failure|Failed to open existing socket\.|(?:rv|fd_) != -1\. -1 vs -1\. (?:epoll_ctl|epoll_create|getsockname|setsockopt|fcntl|socket|pipe): |RuntimeError: Failed to create a socket|\buv_(?:accept|read_start|read_stop|tcp_getsockname|tcp_getpeername|loop_init|timer_start|interface_addresses): )",
     S::kError, St::kSetup,
     "A socket operation failed on this host itself, before anything reached the network: the "
     "process could not create, configure or poll a socket (a security policy, exhausted kernel "
     "buffers, or a closed descriptor reused after an earlier failure).",
     "Read the system error it names; check the process's limits (`ulimit -a`), seccomp or "
     "SELinux denials (`dmesg`, `ausearch`), and whether an earlier error in the log closed the "
     "socket."},
    // c10d's socket.cpp (2.x and 1.11+) logs each failed getaddrinfo of the
    // store's host as a retry warning, "The {IPv4 |IPv6 |}network addresses
    // of (HOST, PORT) cannot be retrieved (gai error: N - TEXT)." and retries
    // until its connect timeout; 1.x's TCPStore threw "host not found: TEXT"
    // (ValueError) at once. Before store_connect_timeout, whose line may quote
    // it, and the cause of that timeout when both are in a log (`explains`).
    {"store_host_unresolvable",
     R"(The (?:IPv4 )?network addresses of \(([^,]*), (\d+)\) cannot be retrieved \(gai error: (-?\d+) - ([^)]*)\)|host not found: (.+))",
     S::kError, St::kConnect,
     "The store's host name (MASTER_ADDR or --rdzv_endpoint) does not resolve on this host, so "
     "this rank cannot reach the rendezvous store; c10d retries until its timeout, and the "
     "timeout that follows is this failure, not a slow or unreachable store.",
     "Give MASTER_ADDR as an address, or make the name resolve on every host (DNS, /etc/hosts; "
     "in Kubernetes the master's Service must exist before the workers start).",
     R"(store host \1 (port \2) does not resolve: \4|store host does not resolve: \5)", nullptr,
     "store_connect_timeout rendezvous_failed"},
    // TCPStore's connect-and-validate loop (2.4+): the TCP connect succeeded
    // but the store's first reply never came: something other than the store
    // accepted the connection (a proxy or VPN's fake IP, a port forward, a
    // load balancer, a half-open NAT) and then reset or closed it.
    {"store_no_reply",
     R"(failed to connect/validate to host (\S+?):(\d+) - (?:retrying|timed out) \([^)]*\): (?:Connection reset by peer|Failed to recv, got 0 bytes|Broken pipe))",
     S::kError, St::kConnect,
     "The connection to the rendezvous store was accepted but no store answered: something in "
     "between took it (an HTTP or SOCKS proxy, a VPN's TUN with fake IPs such as 198.18.x.x or "
     "26.26.x.x, a kubectl port-forward, a load balancer) and reset or closed it.",
     "Connect to the store's real address directly: unset http_proxy/https_proxy/all_proxy (or "
     "add MASTER_ADDR to no_proxy), turn off a system proxy or VPN's TUN mode, and check "
     "`getent hosts MASTER_ADDR` gives the store host's own address.",
     R"(store \1:\2 accepted the connection but never answered)"},
    // c10d's socket.cpp: "(host, port)" in 1.x, "host:port" in 2.x; a retry
    // that timed out names the address it tried. Before socket.cpp (1.8 and
    // older), SYSCHECK threw connect's ETIMEDOUT as strerror alone ("RuntimeError:
    // Connection timed out"); a store socket's read timeout is "Socket Timeout".
    // Posters hide the address ("(PRIVATE_IP, PORT)"): the message stays.
    {"store_connect_timeout",
     R"(client socket has timed out after (\S+) while trying to connect to (?:\(([^,]+), (\d+|[A-Z][A-Z_]*)\)|(\S*\d))|connect\(\) timed out\. Original timeout was (\d+) ?ms|client socket has failed to connect to any network address(?: of \(([^,]+), (\d+)\))?|client socket has failed to connect to (\S*\d)[^\n]*(?:errno: (?:110|60)\b|Connection timed out|Operation timed out|system error: 10060\b)|(?:^|\W)(?:[\w.]*\.)?(?:RuntimeError|DistNetworkError|TimeoutError): Connection timed out\s*$|The server socket on (\S+) has timed out, will retry|(?:^|\W)RuntimeError: connect\(\) timed out\.\s*$)",
     S::kError, St::kConnect,
     "This rank could not reach the rendezvous store (MASTER_ADDR:MASTER_PORT) in time.",
     "Check rank 0 is running and listening on MASTER_PORT, MASTER_ADDR is reachable from "
     "here (a name parsed as a number, such as 0.0.0.5, is a mistyped MASTER_ADDR), and no "
     "firewall drops that port.",
     R"(store \2:\3 after \1|store \4 after \1|store connect timeout \5 ms|store \6:\7, no address of it answered|store \8, connect timed out (errno 110)|store \9, connect timed out)",
     // torch elastic's "RendezvousConnectionError: The connection to the C10d
     // store has failed. See inner exception" wraps this timeout, and its
     // error_handler report prints the wrapper before the inner traceback.
     nullptr, "rendezvous_failed", true, true},
    // Also c10d's SYSCHECK on the store's connect: strerror alone, which
    // Gloo's pair errors never are (they name their file and peer).
    {"store_connect_refused",
     R"(client socket .*(Connection refused|errno: 111|system error: 10061\b)|Connection refused.*TCPStore|TCPStore.*Connection refused|(?:^|\W)(?:[\w.]*\.)?(?:RuntimeError|DistNetworkError): Connection refused\s*$|Read data from KVStore server failed|Connecting to Redis: )",
     S::kError, St::kConnect,
     "The rendezvous store refused the connection: nothing listens on MASTER_PORT yet.",
     "Start rank 0 first or give the store a longer timeout; check MASTER_PORT matches."},
    // socket.cpp asks getaddrinfo for IPv6 first (prefer_ipv6) with
    // AI_V4MAPPED | AI_ALL, so a name with IPv4 addresses only still answers
    // (mapped): on Linux an IPv6 miss means the name has no address here yet.
    // c10d retries it until its connect timeout; a run that goes on found the
    // name later (a Kubernetes Service created after the pod), so alone it is
    // a warning, and the cause of a store connect timeout that follows. Users
    // often post only these lines, from a run they stopped while it retried.
    {"store_host_no_ipv6",
     R"(The IPv6 network addresses of \(([^,]*), (\d+)\) cannot be retrieved \(gai error: (-?\d+) - ([^)]*)\))",
     S::kWarning, St::kConnect,
     "c10d could not resolve the store's host name (asked for IPv6 with IPv4 addresses mapped "
     "in, so on Linux the name had no address at all) and retries until its connect timeout. "
     "Harmless when the run goes on (the name resolved later); when a store connect timeout "
     "follows, this is its cause.",
     "If the job then fails to reach the store: make the name resolve on every host (`getent "
     "hosts NAME`; DNS, /etc/hosts, the master's Kubernetes Service) or give MASTER_ADDR as an "
     "address.",
     R"(store host \1 (port \2) did not resolve: \4)", nullptr,
     "store_connect_timeout rendezvous_failed"},
    // socket.cpp on Windows: "The client socket has failed to connect to
    // [HOST]:PORT (system error: 10049 - ...)" in the system's language,
    // WSAEADDRNOTAVAIL: the name (the machine's own, as torchrun's default
    // rendezvous uses it) gave an address that cannot be connected to, such
    // as 0.0.0.0 from a hosts-file entry. c10d tries the name's other
    // addresses: most runs that print it go on, and fail (if they do) for
    // another reason, like NCCL missing on Windows. Only a warning, also
    // before a store connect that fails: the other addresses may have
    // failed otherwise (refused, timed out), which that error's line names.
    {"store_address_not_valid",
     R"(client socket has failed to connect to (\S+) \((?:system error: 10049|errno: (?:22|99|49)) - )", S::kWarning,
     St::kConnect,
     "On Windows, c10d's store client got an address for the store's host name that cannot be "
     "connected to (WSAEADDRNOTAVAIL, 10049; often 0.0.0.0 from a hosts-file entry, or the "
     "machine's own name resolving oddly). It tries the name's other addresses, so this is "
     "harmless when the run goes on; when the store connect then fails, it is one reason.",
     "If the store connect fails: set MASTER_ADDR=127.0.0.1 for a single machine (or "
     "--rdzv-endpoint 127.0.0.1:PORT / --master_addr), or fix the hosts-file entry for that "
     "name (`ping NAME` shows the address it resolves to).",
     R"(store address \1 is not usable from this host)"},
    // connect(2) refused by this host's own policy: EPERM is a netfilter
    // rule (iptables/nftables OUTPUT reject, a firewall daemon), EACCES a
    // security module. A retry will not pass it, and a timeout or refusal
    // after it in one log is its echo (`explains`).
    {"firewall_blocked",
     R"(client socket has failed to connect to (\S+) \(errno: (?:1 - Operation not permitted|13 - Permission denied)\)|\bconnect(?: \S+)?: Operation not permitted)",
     S::kError, St::kConnect,
     "A firewall or security policy on this host stopped the connection: connect(2) was denied "
     "(EPERM from a netfilter rule, EACCES from SELinux or a sandbox) before any packet left.",
     "Allow the store's and Gloo's ports in the host firewall (`nft list ruleset`, `iptables -S`, "
     "firewalld's zone, ufw) or the security profile; Gloo pairs use ephemeral ports "
     "(net.ipv4.ip_local_port_range), not only MASTER_PORT.",
     R"(connect to \1 denied by a local policy)", nullptr,
     "store_connect_timeout store_connect_refused rendezvous_failed connect_full_mesh pair_connect_timeout pair_connect_refused store_clients_missing",
     true, true},
    {"loopback_refused",
     R"((connect|SO_ERROR|remote=)[^\n]*\[?(127\.0\.[01]\.1)\]?(:\d+)?[^\n]*Connection refused|Connection refused[^\n]*\[(127\.0\.[01]\.1)\])",
     S::kError, St::kSetup,
     "A Gloo pair connect to a loopback address was refused: a rank advertised 127.0.0.1 or "
     "127.0.1.1 (its host name resolves to loopback, as Debian's /etc/hosts does), so peers "
     "connect to themselves.",
     "Set GLOO_SOCKET_IFNAME to the training interface on every host, or make the host name "
     "resolve to the routable address (/etc/hosts).",
     R"(loopback address \2\4)"},
    // A Gloo pair connect that failed where one end is an address no other
    // host can reach: loopback (127.x, another host's 127.0.1.1 from Debian's
    // /etc/hosts), a Docker bridge (172.17.x.x), link-local (169.254.x.x,
    // fe80::). The rank bound the wrong interface, so the plain connect
    // timeout or mesh failure it shows is that choice (a refusal at
    // 127.0.x.1 is loopback_refused, before this). The address test is
    // OnWrongInterface.
    {"pair_wrong_interface",
     R"((?:Connect timeout|timed out connecting|failed to connect, willRetry|Error connecting to|connect \[|SO_ERROR: )[^\n]*?\[([0-9a-fA-F.:]+)\])",
     S::kError, St::kSetup,
     "A Gloo pair connect failed between addresses on the wrong interface: a rank bound (and "
     "advertised) a loopback, Docker-bridge or link-local address, which the other hosts "
     "cannot reach, so their connects time out or go nowhere.",
     "Set GLOO_SOCKET_IFNAME on every host to the interface of the training network (`ip -br "
     "addr`), or make the host name resolve to that network's address; in containers use host "
     "networking or advertise the host's address.",
     R"(address \1 is not on the training network)", OnWrongInterface, nullptr},
    // pair.h's "Connect timeout PEER"; helpers.h's connect loop gives up with
    // "timed out connecting: SO_ERROR: " and the socket's error, to which
    // newer Gloo's SystemError adds ", remote=PEER".
    // The libuv transport (Windows): "Error connecting to PEER: " and libuv's
    // lower-case error text.
    {"pair_connect_timeout",
     R"(Connect timeout(?: (?:rank \d+ \()?(\[[^\]\s]+\]:\d+))?|SO_ERROR: Connection timed out(?:, remote=(\[[^\]\s]+\]:\d+))?|Error connecting to (\[[^\]\s]+\]:\d+): connection timed out|\bconnect (\[[^\]\s]+\]:\d+): Connection timed out)",
     S::kError, St::kConnect,
     "Connecting a Gloo pair to a peer timed out: packets to the peer's pair port are dropped.",
     "Gloo pairs listen on ephemeral ports (net.ipv4.ip_local_port_range), not only "
     "MASTER_PORT; open that range between the hosts (pytorch/pytorch#44544, pytorch/gloo#54). "
     "Run `gloowatch diagnose`.",
     R"(peer \1|peer \2|peer \3|peer \4)"},
    // pair.cc: "connect PEER: " and strerror; the connect loop's "SO_ERROR: "
    // and strerror, with ", remote=PEER" in newer Gloo.
    {"pair_connect_refused",
     R"(\bconnect (?:rank \d+ \()?(\[[^\]\s]+\]:\d+)\)?: Connection refused|SO_ERROR: Connection refused(?:, remote=(\[[^\]\s]+\]:\d+))?|Error connecting to (\[[^\]\s]+\]:\d+): connection refused)",
     S::kError, St::kConnect,
     "A Gloo pair connect was refused: the peer was not listening on that address/port.",
     "Check the peer rank is running and bound to a reachable interface (GLOO_SOCKET_IFNAME); "
     "a firewall REJECT rule also shows as refused.",
     R"(peer \1|peer \2|peer \3)"},
    {"no_route", R"(No route to host|Network is unreachable|host is unreachable|system error: 10065\b|unable to reach each other for)", S::kError, St::kConnect,
     "No route to the peer address: wrong interface/subnet chosen, or a REJECT firewall rule.",
     "Check GLOO_SOCKET_IFNAME selects an interface on the same network on every host; check "
     "`ip route get PEER`.",
     nullptr, nullptr,
     "store_connect_timeout rendezvous_failed connect_full_mesh pair_connect_timeout store_clients_missing"},
    {"connect_full_mesh", R"(connectFullMesh failed|Backing context not fully connected|Missing pair in backing context|Pair is not connected \(|Cannot close pair while waiting on connection)", S::kError, St::kConnect,
     "Gloo could not connect its pairs to every other rank during init_process_group.",
     "Read the error it quotes; common causes are an IPv4/IPv6 mix across hosts, a host name "
     "resolving to loopback, or blocked ephemeral ports. `gloowatch diagnose` checks all three."},
    // dynamic_rendezvous.py's keep-alive: retried every interval, so a miss
    // is a warning; the store's own error (in this log or the store host's)
    // says why.
    {"rendezvous_keepalive_failed",
     R"(has failed to send a keep-alive heartbeat to the rendezvous '([^']*)' due to an error of type (\w+))",
     S::kWarning, St::kConnect,
     "A node missed a keep-alive heartbeat to torch elastic's rendezvous store; retried. When "
     "they keep failing, the store's host (the agent on --rdzv_endpoint) is gone or unreachable.",
     "If the job fails after it, read the store host's log and the error the store connection "
     "raised (reset, timeout) in this one.",
     R"(rendezvous \1: keep-alive failed with \2)"},
    {"rendezvous_failed",
     // The exception as reported ("...RendezvousClosedError" at the end of a
     // line, or followed by its message), not the traceback's "raise ...()";
     // the etcd backends' python-etcd errors (etcd.EtcdKeyNotFound on the
     // etcd-v2 store's key, etcd.EtcdConnectionFailed) end their tracebacks.
     // Horovod's HTTPStore::PerformHTTP gives up on its rendezvous HTTP server
     // after every try failed: refused, timed out, unreachable or an error
     // response alike (the exceptions are logged at DEBUG only), so it names
     // no refusal; its throw reads "what():  HTTP request failed.".
     R"(Rendezvous(Timeout|Closed|Connection)?Error(:|"|\s*$)|The connection to etcd has failed|Etcd server process exited with the code|Timed out waiting for etcd server to be ready|Rendezvous timeout occured in EtcdRendezvousHandler|(?:^|\W)etcd\.Etcd\w+: |HTTP GET request failed too many times|what\(\):\s+HTTP request failed\.)", S::kError, St::kConnect,
     "The rendezvous failed: not every node joined in time, the rendezvous was closed, or its "
     "store could not be reached (torch elastic's --rdzv_endpoint, or the rendezvous HTTP "
     "server horovodrun and horovod.spark start on the driver).",
     "Check --nnodes and --rdzv_endpoint on every node, that all nodes started, and that the "
     "endpoint's port is reachable; for Horovod, that the workers reach the driver's "
     "rendezvous port (HOROVOD_LOG_LEVEL=debug prints each failed request's exception)."},
    // Gloo's pair.cc: "Connection closed by peer " and the peer's address as
    // sockaddr's str(), "[10.0.0.3]:19722" (older builds print none). Newer
    // Gloo names the peer by transport::Pair::peerDescription(), "rank 3
    // ([10.0.0.3]:19722)", in this and the pair's other errors (Read error,
    // Read timeout, Connect timeout), and adds "This is typically caused by
    // a remote worker crashing."
    {"peer_connection_closed",
     R"(Connection closed by peer(?: rank (\d+) \((\[[^\]\s]+\]:\d+)\)| (\[[^\]\s]+\]:\d+))?)", S::kError,
     St::kPeerGone, "The remote rank's process exited or crashed (EOF on the Gloo pair socket).",
     "Read the remote rank's log first (OOM killer, SIGKILL, Python exception); check "
     "`dmesg` on that host. This rank failed only because its peer went away.",
     R"(rank \1 at \2|peer \3)"},
    // pair.cc: "Read error PEER: " / "writev PEER: " and strerror.
    {"peer_connection_reset",
     R"((?:Read error|writev) (?:rank (\d+) \()?(\[[^\]\s]+\]:\d+)\)?: (?:Connection reset by peer|Broken pipe)|\b(?:read|write|writev): (?:Connection reset by peer|Broken pipe)|(?:^|\W)ConnectionResetError[^:]*: (\[Errno 104\] )?Connection reset by peer|getpeername: Transport endpoint is not connected)",
     S::kError, St::kPeerGone,
     "The remote rank died or its socket was reset while a collective was in flight.",
     "Find the rank that died (its own log, `dmesg` for the OOM killer); a reset with no dead "
     "rank points to a middlebox killing idle TCP connections.",
     R"(rank \1 at \2|peer \2)"},
    // Gloo's pair.cc reports a failed read/write as "Read error PEER: " and
    // strerror: ETIMEDOUT there is TCP giving up on unanswered retransmissions.
    {"peer_connection_timed_out",
     R"((Read|Write) error (?:rank (\d+) \((\S+)\)|(\S+)): Connection timed out)", S::kError,
     St::kPeerGone,
     "The TCP connection to the peer timed out: its host stopped answering (crashed, powered "
     "off, or the network between the hosts dropped packets) while a collective was in flight.",
     "Check the peer host is up and its rank's log; then the link between the hosts "
     "(`gloowatch health`, packet loss, a firewall or NAT dropping idle connections).",
     R"(\1 error, rank \2 at \3 timed out|\1 error, peer \4 timed out)"},
    // Gloo's ibverbs transport (gloo/transport/ibverbs/pair.cc): a work
    // completion with an error status, GLOO_ENFORCE'd as "wc->status ==
    // IBV_WC_SUCCESS. N vs 0. Memory region send for slot S: " and
    // ibv_wc_status_str. 12 (IBV_WC_RETRY_EXC_ERR, "transport retry counter
    // exceeded") is the remote HCA never acknowledging: its rank died or the
    // fabric between them drops. An issue title or a cut paste quotes the
    // check without its "[enforce fail at" and its final period.
    {"ibverbs_completion_error",
     R"(wc->status == IBV_WC_SUCCESS\. (\d+) vs 0\b\.?(?: Memory region (send|recv) for slot (\d+): ([^\n]+))?|Exception in handleCompletion: )",
     S::kError, St::kPeerGone,
     "A Gloo InfiniBand (ibverbs) transfer failed: the HCA reported an error completion. "
     "\"transport retry counter exceeded\" (status 12) means the remote side never acknowledged: "
     "its rank died, its port went down, or the fabric between the hosts drops packets.",
     "Read the remote rank's log first; then check the link (`ibstat`, `ibv_devinfo`, the "
     "subnet manager) and that both hosts use the same device and port (GLOO_DEVICE_TRANSPORT). "
     "The TCP transport (the default) avoids the fabric while it is investigated.",
     R"(ibverbs status \1 on \2 slot \3: \4|ibverbs status \1)"},
    // ProcessGroupGloo.cpp: "[Rank 0]: Rank {} failed to pass monitoredBarrier
    // in {} ms", with wait_all_ranks "Ranks {} failed to pass ...".
    {"monitored_barrier_timeout",
     R"(Ranks? (\d+(?:, \d+)*) failed to pass monitoredBarrier in (\d+) ms|timed out in monitoredBarrier|failed to pass monitoredBarrier)",
     S::kError, St::kWait,
     "monitored_barrier found ranks that did not arrive (the message names them).",
     "Inspect the named ranks; they are hung or dead.", R"(rank \1 did not arrive within \2 ms)"},
    {"collective_timeout", R"(Timed out waiting (\d+)ms for (recv|send) operation to complete|Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)[^)]*?Timeout\(ms\)=(\d+)\)(?: ran for (\d+) milliseconds)?|Timeout at NCCL work: (\d+)|Exception \(either an error or timeout\) detected by watchdog at work: (\d+))",
     S::kError, St::kWait,
     "A collective did not complete within the process-group timeout: some rank never joined "
     "it (hung, slow, or stuck in a different collective).",
     "Find the rank that did not reach the collective (py-spy dump on each rank). The limit is "
     "init_process_group(timeout=...), 30 min by default; GLOO_TIMEOUT_SECONDS is not read by "
     "PyTorch or Gloo.",
     R"(a \2 waited \1 ms, the timeout in force|NCCL \4 #\3 ran \6 ms past its \5 ms timeout|NCCL \4 #\3 timed out (timeout \5 ms)|NCCL work #\7 timed out|NCCL work #\8 failed or timed out)"},
    // ProcessGroupNCCL's checks of NCCL's own results: a peer's process died
    // or the network between GPUs failed (ncclRemoteError, "unhandled system
    // error"), or the communicator was aborted after another failure. After
    // collective_timeout, whose watchdog text an abort may quote.
    {"nccl_error",
     R"(NCCL error in: \S+, ([^,]+)|NCCL communicator was aborted on rank (\d+)|\bnccl(?:RemoteError|SystemError|InternalError|UnhandledCudaError|InvalidUsage): )",
     S::kError, St::kPeerGone,
     "NCCL reported a failure: a remote process exited or the network between the GPUs failed "
     "(ncclRemoteError, \"unhandled system error\"), or the communicator was aborted after "
     "another error on this rank.",
     "Read the first failing rank's log (a crash or OOM there is the cause); rerun with "
     "NCCL_DEBUG=INFO to see the failing call, and check NCCL_SOCKET_IFNAME / the IB fabric.",
     R"(NCCL: \1|NCCL communicator aborted on rank \2)"},
    {"pair_io_timeout", R"((Read|Write|Send) timeout (?:rank \d+ \()?\[|Timeout waiting for memory region from )", S::kError, St::kWait,
     "A Gloo pair socket read/write hit the timeout (peer hung or the network stalls).",
     "Check the peer rank is alive and the link is healthy (`gloowatch health`)."},
    // distributed_c10d.py's barrier waits while worker_count != world_size
    // (num_workers_joined since 2.0): once more workers joined than the world
    // holds it can never complete.
    {"store_barrier_overcount",
     R"(store based barrier .*\(world_size=(\d+), (?:worker_count|num_workers_joined)=(\d+)|\] !ifs\.is_open\(\)\. File already exists: |already set\b.*\bKey '[^']*' already set|map_\.find\(key\) == map_\.end\(\)\. Key '[^']*' already set)",
     S::kError, St::kSetup,
     "More processes joined the process group's store barrier than world_size: processes of "
     "more than one run share the store (two jobs on one MASTER_PORT or file, a launcher "
     "starting ranks that the script spawns again), so the barrier can never complete.",
     "Give each job its own MASTER_PORT (or a fresh init file), start each rank once, and "
     "check world_size matches the processes launched.",
     R"(\2 workers joined a barrier of world_size \1)", MoreJoinedThanWorld},
    {"store_barrier_timeout", R"(Timed out initializing process group in store based barrier)",
     S::kError, St::kWait,
     "Not all ranks joined the process group in time (world_size larger than the ranks "
     "actually started, or a rank crashed during start-up).",
     "Check world_size/rank values and that every rank started; see its log."},
    // TCPStore.cpp: 1.x "Wait timeout" / "Socket Timeout" (also Utils.hpp's
    // SYSCHECK on a store socket's EAGAIN); since 2.3 the client's wait throws
    // DistStoreError "wait timeout after {}ms, keys: {}", after socket.cpp's
    // warning "waitForInput: socket SocketImpl(...) timed out after {}ms".
    // Gloo's own stores say "Wait timeout for key(s)", Horovod's HTTPStore
    // "Wait timeout after N seconds for key(s)".
    {"store_wait_timeout",
     R"(wait timeout after (\d+) ?ms, keys: *(.+)|waitForInput: socket .*? timed out after (\d+) ?ms|waitForInput: poll for socket .*? returned 0, likely a timeout|While waitForInput, poolFD failed|Socket Timeout|Wait timeout (?:after \d+ seconds )?for key|Timeout waiting for key|RuntimeError: Wait timeout|Timeout while waiting for keys in EtcdStore|Error waiting on exit barrier|(?:^|\W)(?:RuntimeError|DistNetworkError): Resource temporarily unavailable\s*$)",
     S::kError, St::kWait,
     "Waiting on the rendezvous store timed out: another rank never published its address.",
     "A rank failed before publishing (check all rank logs) or the store timeout is too short.",
     R"(waited \1 ms for \2|store reply waited \3 ms)"},
    // TCPStore.cpp's server side (2.x): rank 0 waited for every client.
    {"store_clients_missing",
     R"(Timed out after (\d+) seconds waiting for clients\. (\d+)/(\d+) clients joined|timed out waiting for all (\d+) members to join)", S::kError,
     St::kWait,
     "The rendezvous store on rank 0 waited for every rank to connect and some never did: they "
     "did not start, failed before init_process_group, or cannot reach MASTER_ADDR:MASTER_PORT.",
     "Read the missing ranks' own logs first (the real error is there: a crash, a missing file, "
     "a wrong MASTER_ADDR); check each host reaches the store (`nc -zv MASTER_ADDR "
     "MASTER_PORT`) and that --nnodes / world_size match what was launched.",
     R"(\2 of \3 ranks joined within \1 s)"},
    // ProcessGroupNCCL's heartbeat monitor: the watchdog thread itself
    // stopped making progress (a CUDA or NCCL call that never returns), so
    // the process is aborted after dumping the Flight Recorder.
    {"nccl_watchdog_hang",
     R"(Heartbeat monitor timed out!|watchdog got stuck for (\d+) seconds without making progress|due to ProcessGroupNCCL watchdog hang|detected no heartbeat of its watchdog)",
     S::kError, St::kWait,
     "ProcessGroupNCCL's watchdog thread hung: a CUDA or NCCL call (often after a GPU fault, or "
     "another thread holding the GIL in a CUDA call) never returned, so the heartbeat monitor "
     "ended the process.",
     "Look for a GPU error or a hung collective before it (py-spy dump, the Flight Recorder "
     "dump); TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC raises the limit if the watchdog is only slow.",
     R"(the watchdog was stuck for \1 s)"},
    // ProcessGroupGloo.cpp's monitoredBarrier on a rank other than 0: it
    // arrived, but rank 0 (which checks the others) failed.
    {"monitored_barrier_rank0_failed",
     R"(Rank (\d+) successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank (\d+))",
     S::kError, St::kAftermath,
     "This rank reached monitored_barrier, but rank 0, which checks every rank, failed while "
     "it waited: the fault is on rank 0 or the rank it reports.",
     "Read rank 0's log: it names the ranks that did not arrive, or its own failure.",
     R"(rank \1 arrived; rank \2 failed)"},
    // c10d's store client (SocketImpl, 2.x): the store's host went away. PyTorch
    // logs it as [W TCPStore.cpp] from watchdog threads at a shutdown without
    // destroy_process_group(), so as a warning it is noise, as an error an echo.
    // Utils.hpp's SYSCHECK throws a failed store send/recv as strerror alone:
    // std::system_error (RuntimeError) in 1.x, DistNetworkError in 2.x. Gloo's
    // pair errors always carry "[...pair.cc:N] Read error PEER: ".
    {"store_connection_reset",
     R"((?:recvValue|recvVector|recvValueWithTimeout|sendBytes|recvBytes) failed on SocketImpl\(|[Ff]ailed to recv, got 0 bytes|(?:^|\W)(?:[\w.]*\.)?(?:RuntimeError|DistNetworkError): (?:Connection reset by peer|Broken pipe)\s*$|store->get\('[^']*'\) got error: (?:Connection reset by peer|Broken pipe)|Failed to check the "should dump" flag on TCPStore)",
     S::kError, St::kAftermath,
     "The connection to the c10d store broke: the process that hosts it (rank 0, or the torchrun "
     "agent on MASTER_ADDR) exited or crashed.",
     "Read the log of the process on MASTER_ADDR first; at the end of a finished job, call "
     "dist.destroy_process_group() before exiting to silence it."},
    // torch elastic's agent (agent/server/api.py) caught a signal and stops
    // its ranks: "Received {sig} death signal, shutting down workers", then
    // SignalException "Process {pid} got signal: {sig}"; {sig} is 15 or
    // Signals.SIGTERM by Python version. A scheduler that ends a job step
    // after one task failed (srun "Terminating StepId") sends it too, so it is
    // of the last stage, like a rank's SIGTERM. 2.x logs the line at W, but
    // a signal is no retry.
    {"launcher_signalled",
     R"(Received (?:Signals\.)?(?:(SIGHUP|1)|(SIGINT|2)|(SIGTERM|15)|(SIG[A-Z]+|\d+)) death signal|SignalException: Process \d+ got signal: (?:Signals\.)?(?:(SIGHUP|1)|(SIGINT|2)|(SIGTERM|15)|(SIG[A-Z]+|\d+))|\bexits with return code = -(1|2)\b)",
     S::kError, St::kAftermath,
     "The launcher (torchrun / torch elastic's agent) received a signal and stopped all its "
     "ranks: SIGTERM from a scheduler (a time limit, preemption, scancel, a Kubernetes pod "
     "deletion or eviction, or a job step ended because another task failed), SIGHUP (1) from "
     "a closed terminal or SSH session, SIGINT (2) from Ctrl-C.",
     "If another node or task failed first, its log has the cause. Otherwise check the "
     "scheduler's record (`sacct -j JOB`, `kubectl describe pod`); for SIGHUP run the job "
     "detached from the terminal (tmux, setsid, or the scheduler).",
     R"(the launcher got signal \1 (hangup: its terminal or SSH session closed)|the launcher got signal \2 (interrupt: Ctrl-C)|the launcher got signal \3 (terminate: a scheduler, a user or a parent process)|the launcher got signal \4|the launcher got signal \5 (hangup: its terminal or SSH session closed)|the launcher got signal \6 (interrupt: Ctrl-C)|the launcher got signal \7 (terminate: a scheduler, a user or a parent process)|the launcher got signal \8)",
     nullptr, nullptr, false},
    // api.py: the agent stopping the ranks still running ("Closing process N
    // via signal SIG" in newer releases); it only says why the SIGTERMs came.
    {"launcher_stops_workers",
     R"((?:Sending process (\d+) closing signal|Closing process (\d+) via signal) (SIG[A-Z]+)|Unable to shutdown process (\d+) via (\S+), forcefully exit?ting via (\S+)|Killing subprocess (\d+)|Terminating remaining workers after failure of Process (\d+))",
     S::kInfo, St::kAftermath,
     "torch elastic's agent is stopping the ranks still running, because one of them failed or "
     "the agent was signalled; their exits with -15 (or -9 after its grace period) follow "
     "from that.",
     "Find the rank that failed before this line (its exit code in the agent's report) or the "
     "signal the agent received.",
     R"(stopping pid \1 with \3|stopping pid \2 with \3|pid \4 did not stop on \5; killed with \6|stopping pid \7|stopping the others after process \8 failed)"},
    {"pair_closed_after_timeout", R"(Application timeout caused pair closure)", S::kError,
     St::kAftermath, "An earlier timeout closed this Gloo pair; later operations fail with it.",
     "Look for the first timeout in the log; that one has the real cause."},
    // Gloo's CUDA helpers (gloo/cuda_private.h, cuda.cu) GLOO_ENFORCE every
    // CUDA call: "error == cudaSuccess. 29 vs 0. Error at: FILE: driver
    // shutting down" is cudaErrorCudartUnloading, a CUDA call after the CUDA
    // runtime was torn down: the process was exiting with Gloo's CUDA work or
    // streams still alive.
    {"cuda_driver_shutting_down",
     R"(error == cudaSuccess\. 29 vs 0|cudaSuccess.*: driver shutting down)", S::kError,
     St::kAftermath,
     "Gloo made a CUDA call while the process was exiting and the CUDA runtime was already "
     "unloaded (cudaErrorCudartUnloading): a teardown-order fault at exit. The work itself had "
     "finished, or an earlier error in the log ended it.",
     "Call dist.destroy_process_group() (after torch.cuda.synchronize()) before the script "
     "returns, and free CUDA tensors used with Gloo first; if the run died mid-way, the first "
     "error above is the cause."},
    // A blocking call cut short by a signal (EINTR): Ctrl-C, or SIGTERM from
    // a scheduler or launcher; the signal is the cause, not the network.
    {"interrupted", R"(Interrupted system call\s*$)", S::kError, St::kAftermath,
     "A blocking call (a store connect, a wait) was interrupted by a signal: Ctrl-C, or SIGTERM "
     "from a scheduler or a launcher stopping the job.",
     "If the job was not stopped on purpose, find who sent the signal (the launcher's log, the "
     "scheduler's record of the job)."},
    {"socket_closed", R"(Socket (unexpectedly )?closed)", S::kError, St::kAftermath,
     "A Gloo pair socket was already closed when used (after an earlier failure).",
     "Look for the first error in the log."},
    // Any other Gloo enforce: an internal check that failed (its condition
    // and values follow "enforce fail at"). Last, so every specific Gloo
    // message before it wins; often the aftermath of a mismatch or a fault
    // named elsewhere in the log.
    {"gloo_enforce_failed",
     R"(\[enforce fail at [^\]]*gloo/(?:transport|rendezvous|context|algorithm|all\w+|broadcast|reduce\w*|barrier\w*|gather\w*|scatter\w*)[^\]]*\] ([^\n]{0,120})|gloo/transport/\S+\] (?:Can only switch to sync mode|The ibverbs transport only supports busy polling))",
     S::kError, St::kAftermath,
     "An internal check of Gloo failed: the condition it prints did not hold. Most often the "
     "echo of another failure (a peer that sent a different collective, a pair closed by an "
     "earlier error); otherwise a bug.",
     "Look for an earlier error in this and the other ranks' logs; run with "
     "TORCH_DISTRIBUTED_DEBUG=DETAIL to catch collective mismatches; report the condition to "
     "pytorch/gloo with the versions if nothing else failed.",
     R"(Gloo check failed: \1)"},
};
// clang-format on

}  // namespace

const char* LogSeverityName(LogSeverity s) {
  switch (s) {
    case LogSeverity::kInfo:
      return "info";
    case LogSeverity::kWarning:
      return "warning";
    case LogSeverity::kError:
      return "error";
  }
  return "info";
}

absl::Span<const LogSignature> LogSignatures() { return kSignatures; }

}  // namespace gloowatch::client
