import torch


class Lamb:
    def __init__(self, numel):
        self.norm_stream = torch.cuda.Stream()
        self.flat_grads = torch.zeros(numel, device="cuda")

    def reductions(self, fused):
        if fused:
            with torch.cuda.stream(self.norm_stream):
                self.norm = torch.ones(1, device="cuda")
        else:
            self.norm_stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.norm_stream):
                self.norm = self.flat_grads.norm()
            torch.cuda.current_stream().wait_stream(self.norm_stream)

    def zero_tail(self, start):
        self.flat_grads[start:].zero_()


def same_function(flat, fused):
    side = torch.cuda.Stream()
    if fused:
        with torch.cuda.stream(side):
            torch.ones(1, device="cuda")
    else:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            n = flat.norm()
        torch.cuda.current_stream().wait_stream(side)
    flat.zero_()
