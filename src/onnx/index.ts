// torch.onnx: export a module's forward as an ONNX model (docs/guide/ecosystem.md).
export { type ExportOptions, exportModel as export } from './export.ts';
export { OnnxExportError } from './graph.ts';
