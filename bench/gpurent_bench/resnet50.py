"""ResNet-50 training throughput with synthetic data and mixed precision.

torchvision's resnet50 (random weights, 1000 classes), channels-last, SGD with
momentum, FP16 autocast with a gradient scaler, a fixed batch size of random
224x224 images generated once on the GPU. img/s = batch·iterations / seconds,
timed with CUDA events over whole training steps (forward, backward, update).
"""

from . import cudatime


def images_per_s(batch_size, iters, seconds):
    if batch_size < 1 or iters < 1:
        raise ValueError("batch_size and iters must be >= 1")
    if seconds <= 0:
        raise ValueError("seconds must be > 0")
    return batch_size * iters / seconds


class ResNet50Bench:
    def __init__(self, device, batch_size=128, iters=100, warmup_iters=20):
        import torch  # noqa: PLC0415 - only on a GPU machine
        import torchvision  # noqa: PLC0415

        self._torch = torch
        self.device = torch.device("cuda", device)
        self.batch_size = batch_size
        self.iters = iters
        torch.backends.cudnn.benchmark = True
        with torch.cuda.device(self.device):
            model = torchvision.models.resnet50(weights=None, num_classes=1000)
            model = model.to(self.device, memory_format=torch.channels_last)
            model.train()
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
            loss_fn = torch.nn.CrossEntropyLoss()
            if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
                scaler = torch.amp.GradScaler("cuda")
            else:
                scaler = torch.cuda.amp.GradScaler()
            gen = torch.Generator(device=self.device)
            gen.manual_seed(1234)
            images = torch.randn(batch_size, 3, 224, 224, device=self.device,
                                 generator=gen).contiguous(memory_format=torch.channels_last)
            labels = torch.randint(0, 1000, (batch_size,), device=self.device, generator=gen)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                loss = loss_fn(model(images), labels)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

        self._step = step
        self.params = {"batch_size": batch_size, "iters": iters, "warmup_iters": warmup_iters,
                       "precision": "amp_fp16", "data": "synthetic",
                       "memory_format": "channels_last", "image_size": 224,
                       "torchvision": torchvision.__version__}
        if warmup_iters > 0:
            cudatime.elapsed_s(torch, self.device, step, warmup_iters)

    def run(self):
        elapsed = cudatime.elapsed_s(self._torch, self.device, self._step, self.iters)
        return images_per_s(self.batch_size, self.iters, elapsed)
