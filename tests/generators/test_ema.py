"""The weights' moving average that generators sample with."""

from __future__ import annotations

import copy

import torch

from panoramia.modalities.image.ema import update_ema


def test_the_average_moves_each_float_tensor_by_its_share_and_copies_counts() -> None:
    torch.manual_seed(0)
    network = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3))
    average = copy.deepcopy(network)
    before = {k: v.clone() for k, v in average.state_dict().items()}
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.add_(torch.randn_like(parameter))
    network(torch.randn(4, 2, 5, 5))  # batch-norm statistics and its batch count move
    update_ema(average, network, 0.9)
    now, current = average.state_dict(), network.state_dict()
    for name, value in now.items():
        if value.dtype.is_floating_point:
            expected = 0.9 * before[name] + 0.1 * current[name]
            torch.testing.assert_close(value, expected, rtol=1e-6, atol=1e-6)
        else:
            assert torch.equal(value, current[name]), name
    assert int(now["1.num_batches_tracked"]) == 1
