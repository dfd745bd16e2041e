import torch


class Optimizer:
    def __init__(self):
        self.update_stream = torch.cuda.Stream()
        self.params = torch.zeros(16, device="cuda")

    def _update(self):
        with torch.cuda.stream(self.update_stream):
            self.params.add_(1)

    def step(self):
        self.update_stream.wait_stream(torch.cuda.current_stream())
        self._update()
        torch.cuda.current_stream().wait_stream(self.update_stream)

    def norm(self):
        return self.params.norm()
