"""A CUDA data prefetcher, as found in many training scripts: while the model works on batch N,
batch N+1 is copied to the GPU on a side stream.

The bug: ``next()`` normalizes the prefetched batch on the default stream, but nothing makes the
default stream wait for the copy stream. The division may read the batch before the copy has landed
(stale or half-written data, no error raised).
The fix is one line in ``next()``: ``torch.cuda.current_stream().wait_stream(self.stream)``
(and ``record_stream`` so the caching allocator does not recycle the memory early).
"""

import torch


class CUDAPrefetcher:
    def __init__(self, loader):
        self.loader = iter(loader)
        self.stream = torch.cuda.Stream()
        self.preload()

    def preload(self):
        try:
            self.next_input, self.next_target = next(self.loader)
        except StopIteration:
            self.next_input = None
            self.next_target = None
            return
        with torch.cuda.stream(self.stream):
            self.next_input = self.next_input.cuda(non_blocking=True)
            self.next_target = self.next_target.cuda(non_blocking=True)

    def next(self):
        batch = self.next_input
        target = self.next_target
        if batch is not None:
            batch = batch.float().div_(255.0)  # uint8 images to [0, 1]
        self.preload()
        return batch, target


def train_one_epoch(model, loader, optimizer, loss_fn):
    prefetcher = CUDAPrefetcher(loader)
    inputs, targets = prefetcher.next()
    while inputs is not None:
        loss = loss_fn(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        inputs, targets = prefetcher.next()
