import torch
import torch.distributed as dist


class SplitsExchange:
    """Exchanges split sizes on the process group's stream."""

    def __init__(self, splits, pg, device):
        self.workers = pg.size()
        if self.workers == 1:
            self.output_splits = splits
            return
        self.output_splits = torch.empty([self.workers], device=device, dtype=torch.int)
        self.work = dist.all_to_all_single(output=self.output_splits, input=splits, group=pg, async_op=True)

    def wait(self):
        if self.workers > 1:
            self.work.wait()
        return self.output_splits.sum()
