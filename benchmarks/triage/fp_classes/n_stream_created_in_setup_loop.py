import queue

import torch


class CUDAStreamPool:
    def __init__(self, pool_size=8):
        self.stream_queue = queue.Queue(maxsize=pool_size)
        for _ in range(pool_size):
            stream = torch.cuda.Stream()
            self.stream_queue.put(stream)


class DDP:
    def __init__(self, bucket_groups, expert_bucket_groups):
        for groups in [bucket_groups, expert_bucket_groups]:
            communication_stream = torch.cuda.Stream(device=torch.cuda.current_device())
            for group in groups:
                group.communication_stream = communication_stream


def benchmark(sizes):
    for size in sizes:
        s = torch.cuda.Stream()  # never used
        torch.cuda.synchronize()
