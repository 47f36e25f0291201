// torch.nn.modules.pixelshuffle and channelshuffle: the modules that rearrange channels.
// PixelShuffle moves channels into space (sub-pixel upsampling), PixelUnshuffle back, and
// ChannelShuffle interleaves channel groups (ShuffleNet).
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

/** [N, C·r², H, W] to [N, C, H·r, W·r] (torch.nn.PixelShuffle). */
export class PixelShuffle extends Module {
  constructor(readonly upscaleFactor: number) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.pixelShuffle(input, this.upscaleFactor);
  }

  override extraRepr(): string {
    return `upscale_factor=${this.upscaleFactor}`;
  }
}

/** [N, C, H·r, W·r] to [N, C·r², H, W] (torch.nn.PixelUnshuffle). */
export class PixelUnshuffle extends Module {
  constructor(readonly downscaleFactor: number) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.pixelUnshuffle(input, this.downscaleFactor);
  }

  override extraRepr(): string {
    return `downscale_factor=${this.downscaleFactor}`;
  }
}

/** Splits the channels into `groups` and interleaves them (torch.nn.ChannelShuffle). */
export class ChannelShuffle extends Module {
  constructor(readonly groups: number) {
    super();
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.channelShuffle(input, this.groups);
  }

  override extraRepr(): string {
    return `groups=${this.groups}`;
  }
}
