"""The anti-aliased layers BlurPool puts into a model, and the blur they apply.

``BlurConv2d`` wraps a strided ``Conv2d`` (the same module object, so its Parameters stay the ones the
optimizers hold) and ``BlurMaxPool2d`` replaces a ``MaxPool2d``; both blur with the binomial filter
``[1 2 1]^T [1 2 1] / 16``, as Composer does. ``blur_2d`` and ``blurmax_pool2d`` are the functions under them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.common_types import _size_2_t


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
    def from_maxpool2d(module: nn.MaxPool2d) -> BlurMaxPool2d:
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
    def from_conv2d(module: nn.Conv2d, blur_first: bool = True) -> BlurConv2d:
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
