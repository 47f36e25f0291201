// The protobuf messages tsddp writes into TensorBoard event files: the subset of
// TensorBoard's own schemas (tensorboard/compat/proto/event.proto, summary.proto,
// tensor.proto; plugins/hparams and plugins/text) that SummaryWriter uses, with their
// field numbers, encoded by protobufjs. Fields tsddp never sets are left out; a reader
// skips nothing it needs, since protobuf decodes by field number.
import protobuf from 'protobufjs';

const STRUCT = `
syntax = "proto3";
package google.protobuf;
enum NullValue { NULL_VALUE = 0; }
message Value {
  oneof kind {
    NullValue null_value = 1;
    double number_value = 2;
    string string_value = 3;
    bool bool_value = 4;
    ListValue list_value = 6;
  }
}
message ListValue { repeated Value values = 1; }
`;

const TENSORBOARD = `
syntax = "proto3";
package tensorboard;

message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what {
    string file_version = 3;
    Summary summary = 5;
    SessionLog session_log = 7;
  }
}

message SessionLog {
  enum SessionStatus { STATUS_UNSPECIFIED = 0; START = 1; STOP = 2; CHECKPOINT = 3; }
  SessionStatus status = 1;
  string checkpoint_path = 2;
  string msg = 3;
}

message Summary {
  message Image {
    int32 height = 1;
    int32 width = 2;
    int32 colorspace = 3;
    bytes encoded_image_string = 4;
  }
  message Value {
    string tag = 1;
    SummaryMetadata metadata = 9;
    oneof value {
      float simple_value = 2;
      Image image = 4;
      HistogramProto histo = 5;
      TensorProto tensor = 8;
    }
  }
  repeated Value value = 1;
}

message SummaryMetadata {
  message PluginData {
    string plugin_name = 1;
    bytes content = 2;
  }
  PluginData plugin_data = 1;
  string display_name = 2;
  string summary_description = 3;
}

message HistogramProto {
  double min = 1;
  double max = 2;
  double num = 3;
  double sum = 4;
  double sum_squares = 5;
  repeated double bucket_limit = 6;
  repeated double bucket = 7;
}

enum DataType { DT_INVALID = 0; DT_FLOAT = 1; DT_DOUBLE = 2; DT_STRING = 7; }

message TensorShapeProto {
  message Dim { int64 size = 1; string name = 2; }
  repeated Dim dim = 2;
}

message TensorProto {
  DataType dtype = 1;
  TensorShapeProto tensor_shape = 2;
  repeated float float_val = 5;
  repeated double double_val = 6;
  repeated bytes string_val = 8;
}

message TextPluginData { int32 version = 1; }
`;

const HPARAMS = `
syntax = "proto3";
package tensorboard.hparams;

enum DataType { DATA_TYPE_UNSET = 0; DATA_TYPE_STRING = 1; DATA_TYPE_BOOL = 2; DATA_TYPE_FLOAT64 = 3; }
enum Status { STATUS_UNKNOWN = 0; STATUS_SUCCESS = 1; STATUS_FAILURE = 2; STATUS_RUNNING = 3; }

message HParamInfo {
  string name = 1;
  DataType type = 4;
  google.protobuf.ListValue domain_discrete = 5;
}
message MetricName { string group = 1; string tag = 2; }
message MetricInfo { MetricName name = 1; }
message Experiment {
  repeated HParamInfo hparam_infos = 4;
  repeated MetricInfo metric_infos = 5;
}
message SessionStartInfo { map<string, google.protobuf.Value> hparams = 1; }
message SessionEndInfo { Status status = 1; }
message HParamsPluginData {
  int32 version = 1;
  oneof data {
    Experiment experiment = 2;
    SessionStartInfo session_start_info = 3;
    SessionEndInfo session_end_info = 4;
  }
}
`;

const root = new protobuf.Root();
for (const source of [STRUCT, TENSORBOARD, HPARAMS]) protobuf.parse(source, root, { keepCase: true });
root.resolveAll();

/** A message type of the schema above, by its full name ('tensorboard.Event'). */
export function messageType(name: string): protobuf.Type {
  return root.lookupType(name);
}

/** Encodes a plain object as the message `name` (fields by their proto names, snake_case). */
export function encode(name: string, value: Record<string, unknown>): Uint8Array {
  const type = messageType(name);
  return type.encode(type.fromObject(value)).finish();
}
