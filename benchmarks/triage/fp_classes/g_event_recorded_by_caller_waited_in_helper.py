import torch


class Sampler:
    def __init__(self, n):
        self.copy_stream = torch.cuda.Stream()
        self.gpu_ready = torch.cuda.Event()
        self.cpu_tokens = torch.empty(n, dtype=torch.long, pin_memory=True)

    def _copy_to_cpu(self, tokens_gpu):
        with torch.cuda.stream(self.copy_stream):
            self.copy_stream.wait_event(self.gpu_ready)
            self.cpu_tokens.copy_(tokens_gpu, non_blocking=True)

    def step(self, logits):
        tokens = logits.argmax(-1)
        self.gpu_ready.record()
        self._copy_to_cpu(tokens)
        # Kept until the copy is known done (as the real sampler keeps its output): without this
        # reference the reduced program would free `tokens` while the copy stream reads it, a real
        # SYN102 hazard that the class is not about.
        self.pending_tokens = tokens
