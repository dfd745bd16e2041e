"""GPU check behind the triage verdict for apex distributed_fused_lamb.py:878/886 (SYN102).

Question: must a PREMUL_SUM factor *tensor* outlive an async reduce-scatter, or does PyTorch keep
it alive? The factor is made on the current stream and dropped right after the collective is
enqueued (as apex's helper does when it returns). The NCCL stream is kept busy by a large
all-reduce, and the current stream then allocates and fills small tensors, which the caching
allocator may place in the factor's freed block. Expected result with a live factor: 0.5 * ranks.

Run: torchrun --nproc_per_node=2 benchmarks/triage/gpu/premul_factor_lifetime.py
"""

import torch
import torch.distributed as dist


def launch(out, inp, keep):
    scale = torch.full((1,), 0.5, device="cuda")
    work = dist.reduce_scatter_tensor(out, inp, op=dist._make_nccl_premul_sum(scale), async_op=True)
    if keep is not None:
        keep.append(scale)
    return work


def trial(keep_alive, big, n, world):
    inp = torch.ones(n * world, device="cuda")
    out = torch.empty(n, device="cuda")
    torch.cuda.synchronize()
    busy = dist.all_reduce(big, async_op=True)
    keep = [] if keep_alive else None
    work = launch(out, inp, keep)
    junk = [torch.full((1,), 100.0, device="cuda") for _ in range(64)]
    busy.wait()
    work.wait()
    torch.cuda.synchronize()
    del junk
    return out.min().item(), out.max().item()


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    world = dist.get_world_size()
    torch.cuda.set_device(rank)
    big = torch.ones(1 << 28, device="cuda")
    n = 1 << 16
    expected = 0.5 * world
    for keep_alive in (True, False, True, False):
        results = [trial(keep_alive, big, n, world) for _ in range(10)]
        wrong = sum(1 for lo, hi in results if lo != expected or hi != expected)
        if rank == 0:
            print(f"factor kept alive={keep_alive}: {wrong}/10 trials wrong; results={results[:3]} expected={expected}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
