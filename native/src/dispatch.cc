// Any aten op through the c10 dispatcher. JS looks an op up once by schema name
// (findOp), keeps the integer id, then calls it with positional arguments in schema
// order (undefined = the schema's default). Arguments are converted to IValues by the
// kind recorded from the schema at lookup time, so a call does no string work.
#include "common.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

#include <cmath>
#include <memory>

namespace tsddp {
namespace {

enum class Kind : uint8_t {
  Tensor,
  TensorList,
  OptionalTensorList,  // Tensor?[] (indexing)
  Int,                 // int, SymInt, ScalarType, Layout, MemoryFormat (all ints in an IValue)
  IntList,             // int[], SymInt[], int[N]
  Float,
  FloatList,
  Bool,
  BoolList,
  Scalar,
  ScalarList,
  String,
  Device,
  Generator,
  Unsupported,
};

const char* kindName(Kind k) {
  switch (k) {
    case Kind::Tensor: return "Tensor";
    case Kind::TensorList: return "Tensor[]";
    case Kind::OptionalTensorList: return "Tensor?[]";
    case Kind::Int: return "int";
    case Kind::IntList: return "int[]";
    case Kind::Float: return "float";
    case Kind::FloatList: return "float[]";
    case Kind::Bool: return "bool";
    case Kind::BoolList: return "bool[]";
    case Kind::Scalar: return "Scalar";
    case Kind::ScalarList: return "Scalar[]";
    case Kind::String: return "str";
    case Kind::Device: return "Device";
    case Kind::Generator: return "Generator";
    default: return "unsupported";
  }
}

struct ArgInfo {
  std::string name;
  Kind kind;
  bool optional;  // None allowed
  std::optional<c10::IValue> defaultValue;
  int32_t fixedLength;  // N of int[N], or 0
};

struct RetInfo {
  Kind kind;
  bool optional;
  bool writesInput;  // Tensor(a!): returned as undefined, JS returns the input it mutated
};

struct OpEntry {
  c10::OperatorHandle op;
  std::string name;  // aten::add.Tensor, for messages
  std::vector<ArgInfo> args;
  std::vector<RetInfo> rets;
  bool supported;
};

// Per JS thread, like the slot table. Entries are appended, never removed.
std::vector<std::unique_ptr<OpEntry>>& registry() {
  thread_local std::vector<std::unique_ptr<OpEntry>> r;
  return r;
}

std::pair<Kind, bool> classify(const c10::TypePtr& t) {
  using TK = c10::TypeKind;
  bool optional = false;
  c10::TypePtr type = t;
  if (type->kind() == TK::OptionalType) {
    optional = true;
    type = type->castRaw<c10::OptionalType>()->getElementType();
  }
  switch (type->kind()) {
    case TK::TensorType: return {Kind::Tensor, optional};
    case TK::IntType:
    case TK::SymIntType:
    case TK::ScalarTypeType:
    case TK::LayoutType:
    case TK::MemoryFormatType: return {Kind::Int, optional};
    case TK::FloatType:
    case TK::SymFloatType: return {Kind::Float, optional};
    case TK::BoolType:
    case TK::SymBoolType: return {Kind::Bool, optional};
    case TK::NumberType: return {Kind::Scalar, optional};
    case TK::StringType: return {Kind::String, optional};
    case TK::DeviceObjType: return {Kind::Device, optional};
    case TK::GeneratorType: return {Kind::Generator, optional};
    case TK::ListType: {
      auto elem = type->castRaw<c10::ListType>()->getElementType();
      switch (elem->kind()) {
        case TK::TensorType: return {Kind::TensorList, optional};
        case TK::OptionalType:
          if (elem->castRaw<c10::OptionalType>()->getElementType()->kind() == TK::TensorType)
            return {Kind::OptionalTensorList, optional};
          return {Kind::Unsupported, optional};
        case TK::IntType:
        case TK::SymIntType: return {Kind::IntList, optional};
        case TK::FloatType: return {Kind::FloatList, optional};
        case TK::BoolType: return {Kind::BoolList, optional};
        case TK::NumberType: return {Kind::ScalarList, optional};
        default: return {Kind::Unsupported, optional};
      }
    }
    default: return {Kind::Unsupported, optional};
  }
}

std::unique_ptr<OpEntry> makeEntry(const c10::OperatorHandle& op) {
  auto e = std::make_unique<OpEntry>(OpEntry{op, "", {}, {}, true});
  const auto& schema = op.schema();
  e->name = schema.name() + (schema.overload_name().empty() ? "" : "." + schema.overload_name());
  for (const auto& a : schema.arguments()) {
    auto [kind, optional] = classify(a.real_type());
    if (kind == Kind::Unsupported) e->supported = false;
    e->args.push_back(ArgInfo{a.name(), kind, optional, a.default_value(), a.N().value_or(0)});
  }
  for (const auto& r : schema.returns()) {
    auto [kind, optional] = classify(r.real_type());
    if (kind == Kind::Unsupported) e->supported = false;
    bool writes = r.alias_info() != nullptr && r.alias_info()->isWrite() && kind == Kind::Tensor;
    e->rets.push_back(RetInfo{kind, optional, writes});
  }
  return e;
}

[[noreturn]] void badArg(Napi::Env env, const OpEntry& e, const ArgInfo& a, const std::string& why) {
  throw Napi::TypeError::New(env, e.name + ": argument '" + a.name + "' (" + kindName(a.kind) +
                                      (a.optional ? "?" : "") + ") " + why);
}

const char* jsTypeName(const Napi::Value& v) {
  switch (v.Type()) {
    case napi_undefined: return "undefined";
    case napi_null: return "null";
    case napi_boolean: return "a boolean";
    case napi_number: return "a number";
    case napi_string: return "a string";
    case napi_object: return v.IsArray() ? "an array" : "an object";
    case napi_function: return "a function";
    default: return "an unsupported value";
  }
}

int64_t toInt(Napi::Env env, const OpEntry& e, const ArgInfo& a, const Napi::Value& v) {
  if (v.IsBoolean()) return v.As<Napi::Boolean>().Value() ? 1 : 0;
  if (!v.IsNumber()) badArg(env, e, a, std::string("got ") + jsTypeName(v));
  double d = v.As<Napi::Number>().DoubleValue();
  // Range first: casting NaN or |d| >= 2^63 to int64 is undefined behaviour.
  if (d != std::trunc(d)) badArg(env, e, a, "got a non-integer " + std::to_string(d));
  if (!(std::abs(d) < 9223372036854775808.0)) badArg(env, e, a, "got " + std::to_string(d) + ", out of int64 range");
  return static_cast<int64_t>(d);
}

c10::Scalar toScalar(Napi::Env env, const OpEntry& e, const ArgInfo& a, const Napi::Value& v) {
  if (v.IsBoolean()) return c10::Scalar(v.As<Napi::Boolean>().Value());
  if (!v.IsNumber()) badArg(env, e, a, std::string("got ") + jsTypeName(v));
  double d = v.As<Napi::Number>().DoubleValue();
  // JS has one number type: integral values become integer scalars (as Python ints would);
  // -0 stays a double, as Python's -0.0 does (an integer would lose its sign).
  if (d == static_cast<double>(static_cast<int64_t>(d)) && std::abs(d) < 9007199254740992.0 &&
      !(d == 0 && std::signbit(d)))
    return c10::Scalar(static_cast<int64_t>(d));
  return c10::Scalar(d);
}

const at::Tensor& toTensor(Napi::Env env, const OpEntry& e, const ArgInfo& a, const Napi::Value& v) {
  if (!v.IsNumber()) badArg(env, e, a, std::string("got ") + jsTypeName(v));
  // Hot path: no message is built unless the handle is bad.
  const at::Tensor* t = slots().tryGet(v.As<Napi::Number>().Int32Value());
  if (t == nullptr) badArg(env, e, a, "is a disposed tensor (used after dispose())");
  return *t;
}

c10::IValue toIValue(Napi::Env env, const OpEntry& e, const ArgInfo& a, const Napi::Value& v) {
  switch (a.kind) {
    case Kind::Tensor: return toTensor(env, e, a, v);
    case Kind::Int: return toInt(env, e, a, v);
    case Kind::Float:
      if (!v.IsNumber()) badArg(env, e, a, std::string("got ") + jsTypeName(v));
      return v.As<Napi::Number>().DoubleValue();
    case Kind::Bool:
      if (!v.IsBoolean()) badArg(env, e, a, std::string("got ") + jsTypeName(v));
      return v.As<Napi::Boolean>().Value();
    case Kind::Scalar: return toScalar(env, e, a, v);
    case Kind::String:
      if (!v.IsString()) badArg(env, e, a, std::string("got ") + jsTypeName(v));
      return v.As<Napi::String>().Utf8Value();
    case Kind::Device:
      if (!v.IsString()) badArg(env, e, a, std::string("got ") + jsTypeName(v));
      return c10::Device(v.As<Napi::String>().Utf8Value());
    case Kind::Generator: return generatorFromHandle(env, v, (e.name + ": argument '" + a.name + "'").c_str());
    case Kind::IntList: {
      if (v.IsNumber() && a.fixedLength > 0)  // int[2] stride=1 style broadcast
        return std::vector<int64_t>(a.fixedLength, toInt(env, e, a, v));
      if (!v.IsArray()) badArg(env, e, a, std::string("got ") + jsTypeName(v));
      auto arr = v.As<Napi::Array>();
      std::vector<int64_t> out(arr.Length());
      for (uint32_t i = 0; i < arr.Length(); ++i) out[i] = toInt(env, e, a, arr.Get(i));
      return out;
    }
    case Kind::FloatList:
    case Kind::ScalarList:
    case Kind::BoolList:
    case Kind::TensorList:
    case Kind::OptionalTensorList: {
      if (!v.IsArray()) badArg(env, e, a, std::string("got ") + jsTypeName(v));
      auto arr = v.As<Napi::Array>();
      uint32_t n = arr.Length();
      if (a.kind == Kind::FloatList) {
        std::vector<double> out(n);
        for (uint32_t i = 0; i < n; ++i) {
          Napi::Value x = arr.Get(i);
          if (!x.IsNumber()) badArg(env, e, a, "has a non-number element");
          out[i] = x.As<Napi::Number>().DoubleValue();
        }
        return out;
      }
      if (a.kind == Kind::BoolList) {
        c10::List<bool> out;
        for (uint32_t i = 0; i < n; ++i) {
          Napi::Value x = arr.Get(i);
          if (!x.IsBoolean()) badArg(env, e, a, "has a non-boolean element");
          out.push_back(x.As<Napi::Boolean>().Value());
        }
        return out;
      }
      if (a.kind == Kind::ScalarList) {
        std::vector<c10::Scalar> out;
        out.reserve(n);
        for (uint32_t i = 0; i < n; ++i) out.push_back(toScalar(env, e, a, arr.Get(i)));
        return out;
      }
      if (a.kind == Kind::TensorList) {
        std::vector<at::Tensor> out;
        out.reserve(n);
        for (uint32_t i = 0; i < n; ++i) out.push_back(toTensor(env, e, a, arr.Get(i)));
        return out;
      }
      c10::List<std::optional<at::Tensor>> out;
      for (uint32_t i = 0; i < n; ++i) {
        Napi::Value x = arr.Get(i);
        if (x.IsNull() || x.IsUndefined()) out.push_back(std::nullopt);
        else out.push_back(toTensor(env, e, a, x));
      }
      return out;
    }
    default: badArg(env, e, a, "has a type tsddp cannot pass yet");
  }
}

Napi::Value fromIValue(Napi::Env env, const RetInfo& r, c10::IValue& v) {
  if (v.isNone()) return env.Null();
  if (r.writesInput) return env.Undefined();
  if (v.isTensor()) return wrapTensor(env, std::move(v).toTensor());
  if (v.isTensorList()) {
    auto list = v.toTensorVector();
    auto arr = Napi::Array::New(env, list.size());
    for (size_t i = 0; i < list.size(); ++i) arr.Set(static_cast<uint32_t>(i), wrapTensor(env, std::move(list[i])));
    return arr;
  }
  if (v.isBool()) return Napi::Boolean::New(env, v.toBool());
  if (v.isInt()) return Napi::Number::New(env, static_cast<double>(v.toInt()));
  if (v.isDouble()) return Napi::Number::New(env, v.toDouble());
  if (v.isSymInt()) return Napi::Number::New(env, static_cast<double>(v.toSymInt().guard_int(__FILE__, __LINE__)));
  if (v.isScalar()) return scalarValue(env, v.toScalar());
  if (v.isIntList()) {
    auto list = v.toIntVector();
    auto arr = Napi::Array::New(env, list.size());
    for (size_t i = 0; i < list.size(); ++i) arr.Set(static_cast<uint32_t>(i), Napi::Number::New(env, list[i]));
    return arr;
  }
  if (v.isString()) return Napi::String::New(env, v.toStringRef());
  return env.Undefined();
}

// findOp(name, overload) -> id, or -1 when this libtorch has no such op.
Napi::Value FindOp(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = info[0].As<Napi::String>().Utf8Value();
  std::string overload = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
  auto op = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!op) return Napi::Number::New(env, -1);
  auto& r = registry();
  r.push_back(makeEntry(*op));
  return Napi::Number::New(env, static_cast<double>(r.size() - 1));
}

// call(id, ...args) -> result (handle, array, number, boolean, null or undefined).
Napi::Value Call(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& r = registry();
  uint32_t id = info[0].As<Napi::Number>().Uint32Value();
  if (id >= r.size()) throw Napi::TypeError::New(env, "call(): unknown op id " + std::to_string(id));
  const OpEntry& e = *r[id];
  if (!e.supported) throw Napi::TypeError::New(env, e.name + ": has an argument type tsddp cannot pass");
  size_t given = info.Length() - 1;
  if (given > e.args.size())
    throw Napi::TypeError::New(env, e.name + ": takes " + std::to_string(e.args.size()) + " arguments, got " +
                                        std::to_string(given));
  thread_local std::vector<c10::IValue> stack;
  stack.clear();
  // Conversion is guarded too: parsing a Device string, for one, throws c10::Error.
  return guarded(env, e.name, [&]() -> Napi::Value {
  for (size_t i = 0; i < e.args.size(); ++i) {
    const ArgInfo& a = e.args[i];
    Napi::Value v = i < given ? info[i + 1] : env.Undefined();
    if (v.IsUndefined() || v.IsNull()) {
      if (v.IsUndefined() && a.defaultValue) {
        const c10::IValue& d = *a.defaultValue;
        if (a.kind == Kind::IntList && d.isInt() && a.fixedLength > 0)
          stack.emplace_back(std::vector<int64_t>(a.fixedLength, d.toInt()));
        else
          stack.push_back(d);
      } else if (a.optional) {
        stack.emplace_back();
      } else {
        badArg(env, e, a, "is required");
      }
      continue;
    }
    stack.push_back(toIValue(env, e, a, v));
  }
    e.op.callBoxed(stack);
    if (e.rets.empty()) return env.Undefined();
    if (e.rets.size() == 1) return fromIValue(env, e.rets[0], stack[0]);
    auto out = Napi::Array::New(env, e.rets.size());
    for (size_t i = 0; i < e.rets.size(); ++i) out.Set(static_cast<uint32_t>(i), fromIValue(env, e.rets[i], stack[i]));
    return out;
  });
}

Napi::Object describeArg(Napi::Env env, const c10::Argument& a) {
  auto o = Napi::Object::New(env);
  auto [kind, optional] = classify(a.real_type());
  o.Set("name", a.name());
  o.Set("type", a.real_type()->str());
  o.Set("kind", kindName(kind));
  o.Set("optional", optional);
  o.Set("hasDefault", a.default_value().has_value());
  o.Set("kwargOnly", a.kwarg_only());
  o.Set("writes", a.alias_info() != nullptr && a.alias_info()->isWrite());
  o.Set("fixedLength", a.N().value_or(0));
  return o;
}

Napi::Object describeSchema(Napi::Env env, const c10::FunctionSchema& s) {
  auto o = Napi::Object::New(env);
  o.Set("name", s.name());
  o.Set("overload", s.overload_name());
  o.Set("schema", c10::toString(s));
  auto args = Napi::Array::New(env);
  for (size_t i = 0; i < s.arguments().size(); ++i) args.Set(static_cast<uint32_t>(i), describeArg(env, s.arguments()[i]));
  auto rets = Napi::Array::New(env);
  for (size_t i = 0; i < s.returns().size(); ++i) rets.Set(static_cast<uint32_t>(i), describeArg(env, s.returns()[i]));
  o.Set("args", args);
  o.Set("returns", rets);
  return o;
}

// opSchema(id) -> the schema of a looked-up op, described as listOps() does.
Napi::Value OpSchema(const Napi::CallbackInfo& info) {
  auto& r = registry();
  uint32_t id = info[0].As<Napi::Number>().Uint32Value();
  if (id >= r.size()) throw Napi::TypeError::New(info.Env(), "opSchema(): unknown op id " + std::to_string(id));
  return describeSchema(info.Env(), r[id]->op.schema());
}

// listOps() -> every registered aten schema, described for the code generator.
Napi::Value ListOps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto out = Napi::Array::New(env);
  uint32_t k = 0;
  for (const auto& n : c10::Dispatcher::singleton().getAllOpNames()) {
    if (n.name.rfind("aten::", 0) != 0) continue;
    auto op = c10::Dispatcher::singleton().findSchema(n);
    if (op) out.Set(k++, describeSchema(env, op->schema()));
  }
  return out;
}

}  // namespace

void initDispatch(Napi::Env env, Napi::Object exports) {
  exports.Set("findOp", Napi::Function::New(env, FindOp));
  exports.Set("call", Napi::Function::New(env, Call));
  exports.Set("listOps", Napi::Function::New(env, ListOps));
  exports.Set("opSchema", Napi::Function::New(env, OpSchema));
}

}  // namespace tsddp
