"""BlurPool (Zhang 2019): low-pass filter before every downsampling, so that shifting the input by a pixel
changes the output less (anti-aliasing), which tends to improve accuracy for a little compute.

A strided convolution or a max-pool samples its input every ``stride`` pixels; high frequencies then
alias. Model surgery replaces strided ``Conv2d`` layers (with at least ``min_channels`` input channels:
the blur costs the most relative to thin early layers) by ``BlurConv2d`` and every ``MaxPool2d`` by
``BlurMaxPool2d``, both blurring with the binomial filter ``[1 2 1]^T [1 2 1] / 16``, as in Composer.

Two differences from Composer, both to keep the surgery safe to run twice and invisible to optimizers:
- ``BlurConv2d`` wraps the original convolution module instead of copying its weights into a new one,
  so every Parameter keeps its identity and optimizers built on ``model.parameters()`` before the
  surgery still train the model (Composer had to patch their param groups).
- The surgery does not look inside layers it already produced. Composer's does, so applying it twice
  blurred the strided convolution inside a ``BlurConv2d`` again (a double blur).

The state dict's keys change (``conv.weight`` becomes ``conv.conv.weight``, plus the filter buffers), so a
checkpoint trained with BlurPool cannot be loaded without it: ``required_on_load()`` is True, and the
checkpoint loader re-applies the surgery (``load_recreate_required_algorithms=True``) or refuses.

Runs on INIT, before the Trainer builds its default optimizer, moves the model and wraps it in DDP.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.common_types import _size_2_t

from raycomp.core.algorithm import Algorithm
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State


def _default_2d_filter(device: torch.device | None = None, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The (1, 1, 3, 3) binomial filter ``[[1, 2, 1], [2, 4, 2], [1, 2, 1]] / 16``: it sums to one."""
    row = torch.tensor([1.0, 2.0, 1.0], device=device, dtype=dtype or torch.float32)
    return (row[:, None] * row[None, :] / 16).view(1, 1, 3, 3)


def blur_2d(input: torch.Tensor, stride: _size_2_t = 1, filter: torch.Tensor | None = None) -> torch.Tensor:
    """Low-pass filter each channel of an NCHW ``input`` with ``filter``, zero-padded to keep the size.

    ``filter`` is (kH, kW) or (1 or C, 1, kH, kW) with odd sizes; by default the 3x3 binomial filter.
    ``stride`` downsamples after filtering. An input smaller than the filter is returned as it is.
    """
    channels, height, width = input.shape[1], input.shape[2], input.shape[3]
    if filter is None:
        filter = _default_2d_filter(input.device, input.dtype)
    if filter.dim() == 2:
        filter = filter[None, None]
    if filter.shape[0] == 1 and channels > 1:
        filter = filter.expand(channels, 1, *filter.shape[2:])
    filter_h, filter_w = filter.shape[2], filter.shape[3]
    if filter_h % 2 == 0 or filter_w % 2 == 0:
        raise ValueError(f"The blur filter must have odd height and width, got {filter_h}x{filter_w}")
    padding = (filter_h // 2, filter_w // 2)
    if height + 2 * padding[0] < filter_h or width + 2 * padding[1] < filter_w:
        return input
    return F.conv2d(input, filter.to(input.dtype), stride=stride, padding=padding, groups=channels)


def blurmax_pool2d(
    input: torch.Tensor,
    kernel_size: _size_2_t | None = None,
    stride: _size_2_t = 2,
    padding: _size_2_t = 0,
    dilation: _size_2_t = 1,
    ceil_mode: bool = False,
    filter: torch.Tensor | None = None,
) -> torch.Tensor:
    """Max-pool with anti-aliasing: the max over each window at stride 1, then a blur that downsamples."""
    maxs = F.max_pool2d(
        input, kernel_size=kernel_size or (2, 2), stride=1, padding=padding, dilation=dilation, ceil_mode=ceil_mode
    )
    return blur_2d(maxs, stride=stride, filter=filter)


class BlurMaxPool2d(nn.Module):
    """A drop-in ``MaxPool2d`` with anti-aliasing (no ``return_indices``: ill-defined after a blur)."""

    def __init__(
        self,
        kernel_size: _size_2_t,
        stride: _size_2_t | None = None,
        padding: _size_2_t = 0,
        dilation: _size_2_t = 1,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.ceil_mode = ceil_mode
        self.register_buffer("filt2d", _default_2d_filter())  # a buffer, so .to(device) moves it

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return blurmax_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.filt2d
        )

    @staticmethod
    def from_maxpool2d(module: nn.MaxPool2d, module_index: int = -1) -> BlurMaxPool2d:
        return BlurMaxPool2d(module.kernel_size, module.stride, module.padding, module.dilation, module.ceil_mode)


class BlurConv2d(nn.Module):
    """A strided ``Conv2d`` with anti-aliasing.

    ``blur_first=True`` blurs the input at stride 1, then runs the (strided) convolution: the only extra
    cost is the blur. ``blur_first=False`` runs the convolution at stride 1 and blurs its output with
    the stride, as in the paper, for about ``stride**2`` times the convolution's cost.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: _size_2_t,
        stride: _size_2_t | None = None,
        padding: _size_2_t = 0,
        dilation: _size_2_t = 1,
        groups: int = 1,
        bias: bool = True,
        blur_first: bool = True,
    ) -> None:
        super().__init__()
        self.blur_first = blur_first
        if blur_first:
            if stride is None:
                raise ValueError("BlurConv2d with blur_first=True needs the convolution's stride")
            conv_stride, self.blur_stride, blur_channels = stride, 1, in_channels
        else:
            conv_stride, self.blur_stride, blur_channels = 1, kernel_size if stride is None else stride, out_channels
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, conv_stride, padding, dilation, groups, bias)
        self.register_buffer("blur_filter", _default_2d_filter().repeat(blur_channels, 1, 1, 1))

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.blur_first:
            return self.conv(blur_2d(input, stride=self.blur_stride, filter=self.blur_filter))
        return blur_2d(self.conv(input), stride=self.blur_stride, filter=self.blur_filter)

    @staticmethod
    def from_conv2d(module: nn.Conv2d, module_index: int = -1, blur_first: bool = True) -> BlurConv2d:
        """Wrap ``module`` itself, so its Parameters (and optimizers holding them) stay the same objects."""
        with torch.device("meta"):  # a placeholder conv: no memory, and no draw from the RNG to initialise it
            blurconv = BlurConv2d(
                module.in_channels,
                module.out_channels,
                module.kernel_size,
                module.stride,
                module.padding,
                module.dilation,
                module.groups,
                module.bias is not None,
                blur_first,
            )
        if not blur_first:
            module.stride = (1, 1)  # the blur downsamples instead
        blurconv.conv = module
        channels = blurconv.blur_filter.shape[0]
        blurconv.blur_filter = _default_2d_filter(module.weight.device).repeat(channels, 1, 1, 1)
        return blurconv


def apply_blurpool(
    model: nn.Module,
    replace_convs: bool = True,
    replace_maxpools: bool = True,
    blur_first: bool = True,
    min_channels: int = 16,
    optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] | None = None,
) -> nn.Module:
    """Add anti-aliasing to ``model`` in place: strided convs become ``BlurConv2d``, max-pools ``BlurMaxPool2d``.

    Only convolutions with a stride above 1 and at least ``min_channels`` input channels are replaced.
    Applying it again changes nothing. ``optimizers`` is accepted for Composer's signature only: the
    surgery keeps every Parameter object, so optimizers built before it need no update.
    """
    del optimizers  # nothing to patch: see the docstring
    device = next((t.device for t in (*model.parameters(), *model.buffers())), torch.device("cpu"))
    _replace_children(model, replace_convs, replace_maxpools, blur_first, min_channels, device, {})
    if not any(isinstance(m, BlurConv2d | BlurMaxPool2d) for m in model.modules()):
        warnings.warn(
            "BlurPool changed no layer: the model has no strided Conv2d with >= min_channels input channels "
            "and no MaxPool2d",
            stacklevel=2,
        )
    return model


def _replace_children(
    module: nn.Module,
    replace_convs: bool,
    replace_maxpools: bool,
    blur_first: bool,
    min_channels: int,
    device: torch.device,
    done: dict[int, nn.Module],
) -> None:
    """Replace eligible children depth-first; ``done`` maps a replaced module to its replacement, so a
    module shared by several parents gets one replacement, and a Blur layer is never entered."""
    for name, child in list(module.named_children()):
        if id(child) in done:
            setattr(module, name, done[id(child)])
            continue
        if isinstance(child, BlurConv2d | BlurMaxPool2d):
            continue  # already anti-aliased: the strided conv inside a BlurConv2d must not be blurred again
        replacement: nn.Module | None = None
        if replace_convs and isinstance(child, nn.Conv2d):
            if max(child.stride) > 1 and child.in_channels >= min_channels:
                replacement = BlurConv2d.from_conv2d(child, blur_first=blur_first)
        elif replace_maxpools and isinstance(child, nn.MaxPool2d) and not child.return_indices:
            replacement = BlurMaxPool2d.from_maxpool2d(child).to(device)
        if replacement is None:
            _replace_children(child, replace_convs, replace_maxpools, blur_first, min_channels, device, done)
        else:
            done[id(child)] = replacement
            setattr(module, name, replacement)


class BlurPool(Algorithm):
    """Applies ``apply_blurpool`` to the model on INIT; ``required_on_load``, as it is model surgery."""

    def __init__(
        self,
        replace_convs: bool = True,
        replace_maxpools: bool = True,
        blur_first: bool = True,
        min_channels: int = 16,
    ) -> None:
        for name, value in (
            ("replace_convs", replace_convs),
            ("replace_maxpools", replace_maxpools),
            ("blur_first", blur_first),
        ):
            if not isinstance(value, bool):
                raise ValueError(f"BlurPool {name} must be true or false, got {value!r}")
        if isinstance(min_channels, bool) or not isinstance(min_channels, int) or min_channels < 1:
            raise ValueError(f"BlurPool min_channels must be an integer >= 1, got {min_channels!r}")
        if not (replace_convs or replace_maxpools):
            warnings.warn("BlurPool with replace_convs=False and replace_maxpools=False changes nothing", stacklevel=2)
        self.replace_convs, self.replace_maxpools = replace_convs, replace_maxpools
        self.blur_first, self.min_channels = blur_first, min_channels

    @staticmethod
    def required_on_load() -> bool:
        return True

    def match(self, event: Event, state: State) -> bool:
        return event is Event.INIT

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        apply_blurpool(
            state.model,
            self.replace_convs,
            self.replace_maxpools,
            self.blur_first,
            self.min_channels,
            optimizers=state.optimizers,
        )
        modules = list(state.model.modules())
        logger.log_metrics(
            {
                "blurpool/num_blurconv_layers": sum(isinstance(m, BlurConv2d) for m in modules),
                "blurpool/num_blurpool_layers": sum(isinstance(m, BlurMaxPool2d) for m in modules),
            },
            state.step,
        )
