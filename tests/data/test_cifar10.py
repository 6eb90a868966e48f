import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import write_cifar10_batch

from raycomp.data import CIFAR10, build_datasets
from raycomp.data.cifar10 import MEAN, STD, load_batch


def _images(n: int, offset: int) -> np.ndarray:
    # Image i is filled with value offset + i, so order is visible after loading.
    return np.broadcast_to((offset + np.arange(n, dtype=np.uint8))[:, None], (n, 3072)).copy()


@pytest.fixture
def cifar_root(tmp_path: Path) -> Path:
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for b in range(5):
        write_cifar10_batch(folder / f"data_batch_{b + 1}", _images(4, 10 * b), [b, b, b, (b + 1) % 10])
    write_cifar10_batch(folder / "test_batch", _images(3, 200), [7, 8, 9])
    return tmp_path


def test_train_split_shapes_labels_and_order(cifar_root: Path) -> None:
    ds = CIFAR10(cifar_root, train=True)
    assert len(ds) == 20
    image, label = ds[0]
    assert image.shape == (3, 32, 32) and image.dtype == torch.float32
    assert isinstance(label, int)
    assert [ds[i][1] for i in range(4, 8)] == [1, 1, 1, 2]
    assert ds.data[5, 0, 0, 0].item() == 11  # batch 2, second image


def test_normalization(cifar_root: Path) -> None:
    image, _ = CIFAR10(cifar_root, train=True)[5]
    expected = (11 / 255 - torch.tensor(MEAN)) / torch.tensor(STD)
    assert torch.allclose(image[:, 7, 9], expected)


def test_channel_major_layout(tmp_path: Path) -> None:
    nhwc = np.zeros((1, 32, 32, 3), dtype=np.uint8)
    nhwc[0, 2, 5] = (10, 20, 30)  # red, green, blue at row 2, column 5
    write_cifar10_batch(tmp_path / "test_batch", nhwc, [3])
    ds = CIFAR10(tmp_path, train=False)  # root pointing straight at the batch folder
    assert ds.data[0, :, 2, 5].tolist() == [10, 20, 30]


def test_test_split_and_transform(cifar_root: Path) -> None:
    ds = CIFAR10(cifar_root, train=False, transform=lambda x: x.flip(-1))
    assert len(ds) == 3 and [ds[i][1] for i in range(3)] == [7, 8, 9]
    assert ds[0][0].shape == (3, 32, 32)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_reads_every_pickle_protocol(tmp_path: Path, protocol: int) -> None:
    write_cifar10_batch(tmp_path / "b", _images(2, 1), [0, 1], protocol=protocol)
    data, labels = load_batch(tmp_path / "b")
    assert data.shape == (2, 3072) and data[1, 0] == 2 and labels == [0, 1]


def _py2_style_batch() -> bytes:
    """A batch pickled as Python 2's cPickle wrote the official files: str opcodes, numpy.core globals."""

    def s(text: bytes) -> bytes:
        return b"U" + bytes([len(text)]) + text  # SHORT_BINSTRING

    raw = bytes(range(256)) * 24  # 2 x 3072 pixels
    dtype = (
        b"cnumpy\ndtype\n"
        + s(b"u1")
        + b"K\x00K\x01\x87R"
        + b"(K\x03"
        + s(b"|")
        + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"
    )
    array = (
        b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85"
        + s(b"b")
        + b"\x87R"
        + b"(K\x01K\x02M\x00\x0c\x86"  # version 1, shape (2, 3072)
        + dtype
        + b"\x89T"  # not Fortran-ordered; BINSTRING of the pixels
        + len(raw).to_bytes(4, "little")
        + raw
        + b"tb"
    )
    labels = b"](K\x04K\x05e"
    return b"\x80\x02}(" + s(b"data") + array + s(b"labels") + labels + b"u."


def test_reads_python2_pickles_like_the_official_files(tmp_path: Path) -> None:
    (tmp_path / "b").write_bytes(_py2_style_batch())
    data, labels = load_batch(tmp_path / "b")
    assert data.dtype == np.uint8 and data.shape == (2, 3072)
    assert data[1, :4].tolist() == [0, 1, 2, 3] and data[0, 255] == 255
    assert labels == [4, 5]


def test_rejects_batches_of_the_wrong_shape(tmp_path: Path) -> None:
    write_cifar10_batch(tmp_path / "b", np.zeros((2, 100), dtype=np.uint8), [0, 1])
    with pytest.raises(ValueError, match="3072"):
        load_batch(tmp_path / "b")


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_refuses_forbidden_globals(tmp_path: Path) -> None:
    path = tmp_path / "test_batch"
    path.write_bytes(pickle.dumps({b"data": _Evil(), b"labels": []}))
    with pytest.raises(pickle.UnpicklingError, match="system"):
        CIFAR10(tmp_path, train=False)


def test_refuses_codecs_encode_with_other_encodings(tmp_path: Path) -> None:
    path = tmp_path / "b"
    payload = b"\x80\x02c_codecs\nencode\nX\x03\x00\x00\x00abcX\x05\x00\x00\x00rot13\x86R."
    path.write_bytes(payload)
    with pytest.raises(pickle.UnpicklingError, match="rot13"):
        load_batch(path)


def test_missing_files_name_the_path_and_never_download(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="never downloads") as excinfo:
        CIFAR10(tmp_path, train=True)
    assert str(tmp_path / "cifar-10-batches-py" / "data_batch_1") in str(excinfo.value)


def test_missing_later_batch_is_named(cifar_root: Path) -> None:
    missing = cifar_root / "cifar-10-batches-py" / "data_batch_4"
    missing.unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_4"):
        CIFAR10(cifar_root)


def test_build_datasets_cifar10(cifar_root: Path) -> None:
    train, test = build_datasets("cifar10", root=str(cifar_root))
    assert (len(train), len(test)) == (20, 3)
