// Automatic mixed precision: autocast regions and the gradient scaler (torch.amp).
export {
  type AutocastDeviceType,
  type AutocastOptions,
  autocast,
  autocastAsync,
  getAutocastDtype,
  isAutocastEnabled,
} from './autocast.ts';
export {
  GradScaler,
  type GradScalerOptions,
  type GradScalerState,
  OptState,
  type ScalableOptimizer,
} from './grad-scaler.ts';
