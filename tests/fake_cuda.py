"""A CUDA device simulated on the CPU, to test device handling where no GPU is lent (CI).

:class:`FakeCuda` is a ``TorchFunctionMode``: inside it, tensors it *places* on the device
report ``device == cuda:0`` (and ``is_cuda``) while their data stays on the CPU, and every torch
call makes the checks CUDA makes:

* an operation whose tensor arguments live on both devices raises, as CUDA does ("Expected all
  tensors to be on the same device"); 0-dim CPU tensors are allowed, as on CUDA, and so are
  CPU index tensors in ``t[index]``;
* ``.to("cuda")`` / ``.cuda()`` copy a CPU tensor onto the device, ``.to("cpu")`` / ``.cpu()``
  copy a device tensor off it, ``.numpy()`` of a device tensor raises;
* a factory call (``torch.zeros``, ``torch.randn``, ...) with ``device="cuda"`` makes a device
  tensor; a random draw needs a generator of the device it draws on (CUDA refuses a CPU
  generator for a CUDA draw), and ``torch.Generator(device="cuda")`` gives a device generator;
* the output of an operation with a device input is on the device.

:meth:`FakeCuda.module` puts a LightningModule on the device (its parameters and buffers, and
its ``device``). The code under test runs unchanged: what reads ``module.device`` or
``tensor.device`` sees ``cuda:0``, so a path that feeds a CPU tensor to the parameters, caches a
CPU output, or draws with a CPU generator for the device fails here as it would on a GPU.
What it cannot show: CUDA kernels' numerics, memory, NCCL.
"""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

CUDA = torch.device("cuda", 0)
CPU = torch.device("cpu")
_REAL_GENERATOR = torch.Generator


class _Generator(_REAL_GENERATOR):
    """A CPU generator that says it belongs to the device it was asked for."""

    def __new__(cls, device: Any = "cpu") -> _Generator:
        gen = super().__new__(cls, device="cpu")
        gen.fake_device = _device(device)
        return gen

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return self.fake_device


def _device(device: Any) -> torch.device:
    dev = torch.device(device)
    return CUDA if dev.type == "cuda" else dev


def _is_device_arg(a: Any) -> bool:
    return isinstance(a, torch.device) or (
        isinstance(a, str) and a.split(":")[0] in ("cpu", "cuda", "meta")
    )


#: calls that read tensors' metadata only (no device check on CUDA either)
_METADATA = {torch._has_compatible_shallow_copy_type}


class FakeCuda(TorchFunctionMode):
    """See the module docstring. Use as a context manager (with ``pytest``'s ``monkeypatch``
    for the generator: :meth:`install`)."""

    def __init__(self) -> None:
        super().__init__()
        self._on: WeakIdKeyDictionary = WeakIdKeyDictionary()

    # -- placing ---------------------------------------------------------------------------
    def place(self, t: torch.Tensor) -> torch.Tensor:
        self._on[t] = True
        return t

    def on_device(self, t: Any) -> bool:
        return isinstance(t, torch.Tensor) and t in self._on

    def module(self, module: torch.nn.Module) -> torch.nn.Module:
        """``module`` on the simulated device: its parameters and buffers, and (a Lightning
        module) its ``device``."""
        for t in [*module.parameters(), *module.buffers()]:
            self.place(t)
        if hasattr(module, "_device"):
            module._device = CUDA
        return module

    @staticmethod
    def install(monkeypatch) -> None:
        """``torch.Generator(device="cuda")`` works (a CPU generator tagged with the device)."""
        monkeypatch.setattr(torch, "Generator", _Generator)

    # -- the checks --------------------------------------------------------------------------
    def _dev(self, t: torch.Tensor) -> torch.device:
        return CUDA if t in self._on else CPU

    def _place_all(self, out: Any) -> Any:
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.place(t)
        return out

    def _move(self, func, args, kwargs, target: torch.device | None):
        src = args[0]
        if target is None:  # a dtype conversion: stays where it is
            out = func(*args, **kwargs)
            return self._place_all(out) if self.on_device(src) else out
        args = tuple(CPU if _is_device_arg(a) else a for a in args)
        if "device" in kwargs:
            kwargs = {**kwargs, "device": CPU}
        if func is torch.Tensor.cuda:
            func, args, kwargs = torch.Tensor.to, (src, CPU), {}
        out = func(*args, **kwargs)
        if target == CUDA:
            if not self.on_device(src):
                out = self.place(out.clone() if out is src else out)
            return out
        if self.on_device(src):  # off the device: a new CPU tensor
            return out.clone() if out is src else out
        return out

    def _target(self, func, args, kwargs) -> torch.device | None:
        if func is torch.Tensor.cpu:
            return CPU
        if func is torch.Tensor.cuda:
            return CUDA
        if "device" in kwargs and kwargs["device"] is not None:
            return _device(kwargs["device"])
        for a in args[1:]:
            if _is_device_arg(a):
                return _device(a)
            if isinstance(a, torch.Tensor):
                return self._dev(a)
        return None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        owner = getattr(func, "__self__", None)  # a property getter: the property
        if owner is torch.Tensor.device:
            return CUDA if self.on_device(args[0]) else func(*args, **kwargs)
        if owner is torch.Tensor.is_cuda:
            return self.on_device(args[0])
        if owner is torch.Tensor.data and func.__name__ == "__set__":  # nn.Module.to's swap
            func(*args, **kwargs)
            if self.on_device(args[1]):
                self.place(args[0])
            else:
                self._on.pop(args[0], None)
            return None
        if func in _METADATA:
            return func(*args, **kwargs)
        if func in (torch.Tensor.to, torch.Tensor.cpu, torch.Tensor.cuda):
            return self._move(func, args, kwargs, self._target(func, args, kwargs))
        if func is torch.Tensor.numpy and self.on_device(args[0]):
            raise TypeError("can't convert cuda:0 device type tensor to numpy (FakeCuda)")
        name = getattr(func, "__name__", str(func))
        # devices of the tensor arguments (index arguments of t[index] may stay on the CPU)
        checked = (args[0], *args[2:]) if name in ("__getitem__", "__setitem__") else args
        tensors = [t for t in tree_flatten((checked, kwargs))[0] if isinstance(t, torch.Tensor)]
        devices = {self._dev(t) for t in tensors if t.dim() > 0 or self.on_device(t)}
        generator = kwargs.get("generator")
        want = None
        if "device" in kwargs and kwargs["device"] is not None:
            want = _device(kwargs["device"])
            kwargs["device"] = CPU
        draw_on = want or (next(iter(devices)) if len(devices) == 1 else CPU)
        if generator is not None and _device(generator.device) != draw_on:
            raise RuntimeError(
                f"Expected a '{draw_on.type}' device type for generator but found "
                f"'{_device(generator.device).type}' (FakeCuda, in {name})"
            )
        if want is not None:
            devices.add(want)
        nonscalar = {self._dev(t) for t in tensors if t.dim() > 0}
        if func in (torch.as_tensor, torch.tensor):  # conversions copy across devices
            nonscalar = set()
        if want is None and len(nonscalar) > 1 or want is not None and nonscalar - {want}:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two "
                f"devices, cuda:0 and cpu! (FakeCuda, in {name})"
            )
        out = func(*args, **kwargs)
        if want == CUDA and any(out is t for t in tensors):
            out = out.clone()  # e.g. torch.as_tensor(cpu_tensor, device="cuda"): a copy
        if CUDA in devices:
            self._place_all(out)
        return out



class OnFakeCuda(L.Callback):
    """Runs a Trainer on the simulated device: Lightning's CPU accelerator sets up, then the
    strategy's root device is ``cuda:0``, so Lightning moves the model and every batch there
    itself (``.to(cuda)``, tagged by the active :class:`FakeCuda`), as it would on a GPU."""

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        trainer.strategy._root_device = CUDA

    def teardown(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        trainer.strategy._root_device = CPU  # the CPU accelerator checks it at the next setup
