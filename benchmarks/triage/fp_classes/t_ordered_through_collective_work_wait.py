import torch
import torch.distributed as dist


class Lamb:
    def __init__(self, numel, group):
        self.group = group
        self.rs_stream = torch.cuda.Stream()
        self.norm_stream = torch.cuda.Stream()
        self.grads = torch.zeros(numel, device="cuda")
        self.grad_shard = torch.zeros(numel // 8, device="cuda")
        self.works = []

    def reduce(self):
        self.rs_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.rs_stream):
            self.works = [dist.reduce_scatter_tensor(self.grad_shard, self.grads, group=self.group, async_op=True)]

    def norm(self):
        with torch.cuda.stream(self.norm_stream):
            for work in self.works:
                work.wait()
            self.norm_value = self.grad_shard.norm()
        torch.cuda.current_stream().wait_stream(self.norm_stream)
