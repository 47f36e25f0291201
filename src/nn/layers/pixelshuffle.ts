// torch.nn.modules.pixelshuffle and channelshuffle: the modules that rearrange channels.
// PixelShuffle moves channels into space (sub-pixel upsampling), PixelUnshuffle back, and
// ChannelShuffle interleaves channel groups (ShuffleNet).
import type * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

const PIXEL_SHUFFLE = signature('PixelShuffle', { required: ['upscaleFactor'] });
const PIXEL_UNSHUFFLE = signature('PixelUnshuffle', { required: ['downscaleFactor'] });
const CHANNEL_SHUFFLE = signature('ChannelShuffle', { required: ['groups'] });

/** [N, C·r², H, W] to [N, C, H·r, W·r] (torch.nn.PixelShuffle). */
export class PixelShuffle extends Module {
  readonly upscaleFactor: number;

  constructor(...args: Args<typeof PIXEL_SHUFFLE, { upscaleFactor: number }>) {
    super();
    this.upscaleFactor = bind<{ upscaleFactor: number }>(PIXEL_SHUFFLE, args, 'PixelShuffle').upscaleFactor;
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
  readonly downscaleFactor: number;

  constructor(...args: Args<typeof PIXEL_UNSHUFFLE, { downscaleFactor: number }>) {
    super();
    const a = bind<{ downscaleFactor: number }>(PIXEL_UNSHUFFLE, args, 'PixelUnshuffle');
    this.downscaleFactor = a.downscaleFactor;
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
  readonly groups: number;

  constructor(...args: Args<typeof CHANNEL_SHUFFLE, { groups: number }>) {
    super();
    this.groups = bind<{ groups: number }>(CHANNEL_SHUFFLE, args, 'ChannelShuffle').groups;
  }

  override forward(input: t.Tensor): t.Tensor {
    return F.channelShuffle(input, this.groups);
  }

  override extraRepr(): string {
    return `groups=${this.groups}`;
  }
}
