// The ONNX messages tsddp writes: the subset of onnx.proto (onnx/onnx.proto3 in the ONNX
// repository) that a model of dense tensors needs, with its field numbers, encoded by
// protobufjs. test/onnx.test.ts checks every field's name and number against the onnx
// Python package's own descriptors where it is installed.
import protobuf from 'protobufjs';

const ONNX = `
syntax = "proto3";
package onnx;

message AttributeProto {
  enum AttributeType { UNDEFINED = 0; FLOAT = 1; INT = 2; STRING = 3; TENSOR = 4; FLOATS = 6; INTS = 7; }
  string name = 1;
  AttributeType type = 20;
  float f = 2;
  int64 i = 3;
  bytes s = 4;
  TensorProto t = 5;
  repeated float floats = 7;
  repeated int64 ints = 8;
}

message ValueInfoProto {
  string name = 1;
  TypeProto type = 2;
}

message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  string name = 3;
  string op_type = 4;
  string domain = 7;
  repeated AttributeProto attribute = 5;
}

message ModelProto {
  int64 ir_version = 1;
  repeated OperatorSetIdProto opset_import = 8;
  string producer_name = 2;
  string producer_version = 3;
  string doc_string = 6;
  GraphProto graph = 7;
}

message GraphProto {
  repeated NodeProto node = 1;
  string name = 2;
  repeated TensorProto initializer = 5;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
}

message TensorProto {
  repeated int64 dims = 1;
  int32 data_type = 2;
  string name = 8;
  bytes raw_data = 9;
}

message TensorShapeProto {
  message Dimension {
    oneof value {
      int64 dim_value = 1;
      string dim_param = 2;
    }
  }
  repeated Dimension dim = 1;
}

message TypeProto {
  message Tensor {
    int32 elem_type = 1;
    TensorShapeProto shape = 2;
  }
  oneof value {
    Tensor tensor_type = 1;
  }
}

message OperatorSetIdProto {
  string domain = 1;
  int64 version = 2;
}
`;

const root = protobuf.parse(ONNX, new protobuf.Root(), { keepCase: true }).root;
root.resolveAll();

/** A message type of the schema, by full name ('onnx.ModelProto'). */
export function onnxType(name: string): protobuf.Type {
  return root.lookupType(name);
}

/** ONNX's TensorProto.DataType codes of the dtypes tsddp exports. */
export const ONNX_DTYPES: Readonly<Record<string, number>> = {
  float32: 1,
  uint8: 2,
  int8: 3,
  int16: 5,
  int32: 6,
  int64: 7,
  bool: 9,
  float16: 10,
  float64: 11,
  bfloat16: 16,
};
