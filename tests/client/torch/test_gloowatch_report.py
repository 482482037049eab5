"""gloowatch_report.StepReporter against an in-test fake Status server
(test double of the daemon's ReportStep only), plus a real two-rank gloo
all_reduce timed with comm(). Run: /usr/bin/python3 test_gloowatch_report.py"""
import concurrent.futures
import datetime
import os
import socket
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "client"))
import gloowatch_report  # noqa: E402
import grpc  # noqa: E402

pb2 = gloowatch_report.load_stubs()


class FakeStatus:
    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()

    def ReportStep(self, request, context):
        if request.communication_seconds > request.step_seconds:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "comm > step")
        with self.lock:
            self.requests.append(request)
        return pb2.ReportStepResponse()


class FakeServerCase(unittest.TestCase):
    def setUp(self):
        self.service = FakeStatus()
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
        handler = grpc.method_handlers_generic_handler("gloowatch.v1.Status", {
            "ReportStep": grpc.unary_unary_rpc_method_handler(
                self.service.ReportStep,
                request_deserializer=pb2.ReportStepRequest.FromString,
                response_serializer=pb2.ReportStepResponse.SerializeToString)})
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def tearDown(self):
        self.server.stop(grace=1).wait(5)


class StepReporterTest(FakeServerCase):
    def test_step_and_comm_timing(self):
        with gloowatch_report.StepReporter("job-1", 3, "127.0.0.1:%d" % self.port,
                                           strict=True) as rep:
            for _ in range(3):
                with rep.step():
                    time.sleep(0.05)
                    with rep.comm():
                        time.sleep(0.05)
        self.assertEqual(len(self.service.requests), 3)
        r = self.service.requests[-1]
        self.assertEqual((r.job, r.rank, r.step), ("job-1", 3, 2))
        self.assertGreaterEqual(r.communication_seconds, 0.05)
        self.assertLess(r.communication_seconds, r.step_seconds)
        self.assertAlmostEqual(rep.communication_share, 0.5, delta=0.1)
        total = sum(x.communication_seconds for x in self.service.requests)
        self.assertAlmostEqual(total, rep.comm_seconds_total, places=9)

    def test_rejection_not_raised_unless_strict(self):
        rep = gloowatch_report.StepReporter("j", 0, "127.0.0.1:%d" % self.port)
        self.assertFalse(rep.report(1, 1.0, 2.0))
        self.assertEqual(rep.errors, 1)
        self.assertEqual(rep.last_error.code(), grpc.StatusCode.INVALID_ARGUMENT)
        strict = gloowatch_report.StepReporter("j", 0, "127.0.0.1:%d" % self.port, strict=True)
        with self.assertRaises(grpc.RpcError):
            strict.report(1, 1.0, 2.0)

    def test_unreachable_daemon_bounded(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        rep = gloowatch_report.StepReporter("j", 0, "127.0.0.1:%d" % port, timeout=1.0)
        start = time.monotonic()
        with rep.step():
            pass
        self.assertLess(time.monotonic() - start, 3)
        self.assertEqual(rep.errors, 1)


def _rank(rank, port, daemon, q):
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=20))
    rep = gloowatch_report.StepReporter("torchjob", rank, daemon, strict=True)
    t = torch.ones(1 << 16)
    for _ in range(5):
        with rep.step():
            time.sleep(0.02)
            with rep.comm():
                dist.all_reduce(t)
    dist.destroy_process_group()
    q.put((rank, rep.communication_share))


class TorchTwoRankTest(FakeServerCase):
    def test_two_rank_gloo_job(self):
        import multiprocessing as mp
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        procs = [ctx.Process(target=_rank, args=(r, port, "127.0.0.1:%d" % self.port, q))
                 for r in (0, 1)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
        self.assertEqual([p.exitcode for p in procs], [0, 0])
        shares = dict(q.get(timeout=5) for _ in procs)
        by_rank = {}
        for r in self.service.requests:
            by_rank.setdefault(r.rank, []).append(r)
        self.assertEqual(sorted(by_rank), [0, 1])
        for rank, reqs in by_rank.items():
            self.assertEqual(len(reqs), 5)
            share = sum(r.communication_seconds for r in reqs) / sum(r.step_seconds for r in reqs)
            self.assertAlmostEqual(share, shares[rank], delta=1e-9)


if __name__ == "__main__":
    unittest.main()
