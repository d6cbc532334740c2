// gendefs: turns one machine-readable definitions file (e.g. rtl/link/link_defs.json) into the
// SystemVerilog package, the C++ header and the Markdown table, so the three never drift apart.
//
//   gendefs DEFS.json --sv OUT.sv --cpp OUT.h --md OUT.md
//
// Every output is written only when its content changes, so rebuilding does not retrigger
// verilation. Errors name the file and the JSON path of the offending entry.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

struct DefsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Value {
  std::string name;
  uint64_t value;
  std::string doc;
};

struct Enum {
  std::string name, cpp_name, sv_type, sv_prefix, doc;
  int width;
  std::vector<Value> values;
};

struct Constant {
  std::string name, doc;
  int width;
  uint64_t value;
};

struct Defs {
  std::string source, name, doc, sv_package, cpp_namespace;
  std::vector<Constant> constants;
  std::vector<Enum> enums;
};

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw DefsError(file_ + ": " + where + ": " + what);
  }

  std::string str(const json& j, const std::string& where, const char* key) const {
    if (!j.contains(key)) fail(where, std::string("missing field \"") + key + "\"");
    if (!j[key].is_string()) fail(where + "." + key, "must be a string");
    return j[key].get<std::string>();
  }

  std::string ident(const json& j, const std::string& where, const char* key) const {
    std::string s = str(j, where, key);
    static const std::regex re("[A-Za-z_][A-Za-z0-9_]*");
    if (!std::regex_match(s, re)) fail(where + "." + key, "\"" + s + "\" is not an identifier");
    return s;
  }

  uint64_t uint(const json& j, const std::string& where, const char* key) const {
    if (!j.contains(key)) fail(where, std::string("missing field \"") + key + "\"");
    if (!j[key].is_number_unsigned()) fail(where + "." + key, "must be a non-negative integer");
    return j[key].get<uint64_t>();
  }

  int width(const json& j, const std::string& where) const {
    uint64_t w = uint(j, where, "width");
    if (w < 1 || w > 64) fail(where + ".width", "must be 1..64, got " + std::to_string(w));
    return static_cast<int>(w);
  }

  void fits(uint64_t v, int w, const std::string& where) const {
    if (w < 64 && (v >> w) != 0)
      fail(where, "value " + std::to_string(v) + " does not fit in " + std::to_string(w) + " bits");
  }

  Defs read() const {
    std::ifstream in(file_);
    if (!in) throw DefsError(file_ + ": cannot open");
    json j;
    try {
      j = json::parse(in);
    } catch (const json::parse_error& e) {
      throw DefsError(file_ + ": not valid JSON: " + e.what());
    }
    Defs d;
    d.source = file_;
    d.name = ident(j, "$", "name");
    d.doc = str(j, "$", "doc");
    d.sv_package = ident(j, "$", "sv_package");
    d.cpp_namespace = str(j, "$", "cpp_namespace");
    std::set<std::string> names;
    auto unique = [&](const std::string& n, const std::string& where) {
      if (!names.insert(n).second) fail(where, "name \"" + n + "\" is defined twice");
    };
    if (j.contains("constants")) {
      if (!j["constants"].is_array()) fail("$.constants", "must be an array");
      for (size_t i = 0; i < j["constants"].size(); ++i) {
        const json& c = j["constants"][i];
        std::string where = "$.constants[" + std::to_string(i) + "]";
        Constant k{ident(c, where, "name"), str(c, where, "doc"), width(c, where),
                   uint(c, where, "value")};
        fits(k.value, k.width, where + ".value");
        unique(k.name, where);
        d.constants.push_back(k);
      }
    }
    if (j.contains("enums")) {
      if (!j["enums"].is_array()) fail("$.enums", "must be an array");
      for (size_t i = 0; i < j["enums"].size(); ++i) {
        const json& e = j["enums"][i];
        std::string where = "$.enums[" + std::to_string(i) + "]";
        Enum en{ident(e, where, "name"), ident(e, where, "cpp_name"), ident(e, where, "sv_type"),
                ident(e, where, "sv_prefix"), str(e, where, "doc"), width(e, where), {}};
        unique(en.name, where);
        if (!e.contains("values") || !e["values"].is_array() || e["values"].empty())
          fail(where + ".values", "must be a non-empty array");
        std::set<uint64_t> seen_values;
        std::set<std::string> seen_names;
        for (size_t k = 0; k < e["values"].size(); ++k) {
          const json& v = e["values"][k];
          std::string vw = where + ".values[" + std::to_string(k) + "]";
          Value val{ident(v, vw, "name"), uint(v, vw, "value"), str(v, vw, "doc")};
          fits(val.value, en.width, vw + ".value");
          if (!seen_values.insert(val.value).second)
            fail(vw + ".value", "value " + std::to_string(val.value) + " is used twice in " + en.name);
          if (!seen_names.insert(val.name).second)
            fail(vw + ".name", "\"" + val.name + "\" is used twice in " + en.name);
          en.values.push_back(val);
        }
        d.enums.push_back(std::move(en));
      }
    }
    return d;
  }

 private:
  std::string file_;
};

std::string banner(const Defs& d, const char* comment) {
  return std::string(comment) + " Generated by tools/gendefs from " + d.name +
         " definitions. Do not edit: change the JSON source instead.\n";
}

std::string sv(const Defs& d) {
  std::ostringstream o;
  o << banner(d, "//") << "// " << d.doc << "\npackage " << d.sv_package << ";\n";
  for (const auto& c : d.constants) {
    o << "\n  // " << c.doc << "\n  localparam logic [" << c.width - 1 << ":0] " << c.name << " = "
      << c.width << "'d" << c.value << ";\n";
  }
  for (const auto& e : d.enums) {
    o << "\n  // " << e.doc << "\n  typedef enum logic [" << e.width - 1 << ":0] {\n";
    for (size_t i = 0; i < e.values.size(); ++i) {
      const auto& v = e.values[i];
      o << "    " << e.sv_prefix << v.name << " = " << e.width << "'d" << v.value
        << (i + 1 < e.values.size() ? "," : "") << "  // " << v.doc << "\n";
    }
    o << "  } " << e.sv_type << ";\n";
  }
  o << "\nendpackage\n";
  return o.str();
}

std::string cpp(const Defs& d) {
  std::ostringstream o;
  o << banner(d, "//") << "// " << d.doc << "\n#pragma once\n\n#include <cstdint>\n#include <optional>\n"
    << "#include <string_view>\n\nnamespace " << d.cpp_namespace << " {\n";
  for (const auto& c : d.constants) {
    o << "\n// " << c.doc << "\ninline constexpr uint64_t k" << c.name << " = " << c.value << "u;\n";
  }
  for (const auto& e : d.enums) {
    const char* base = e.width <= 8 ? "uint8_t" : e.width <= 16 ? "uint16_t" : e.width <= 32 ? "uint32_t" : "uint64_t";
    o << "\n// " << e.doc << "\nenum class " << e.cpp_name << " : " << base << " {\n";
    for (const auto& v : e.values) o << "  " << v.name << " = " << v.value << ",  // " << v.doc << "\n";
    o << "};\n\ninline constexpr int k" << e.cpp_name << "Width = " << e.width << ";\n\n";
    o << "inline std::string_view to_string(" << e.cpp_name << " v) {\n  switch (v) {\n";
    for (const auto& v : e.values)
      o << "    case " << e.cpp_name << "::" << v.name << ": return \"" << v.name << "\";\n";
    o << "  }\n  return \"?\";\n}\n\n";
    o << "inline std::optional<" << e.cpp_name << "> to_" << e.name << "(uint64_t raw) {\n  switch (raw) {\n";
    for (const auto& v : e.values)
      o << "    case " << v.value << ": return " << e.cpp_name << "::" << v.name << ";\n";
    o << "    default: return std::nullopt;\n  }\n}\n";
  }
  o << "\n}  // namespace " << d.cpp_namespace << "\n";
  return o.str();
}

std::string md(const Defs& d) {
  std::ostringstream o;
  o << "<!-- " << banner(d, "").substr(1) << "-->\n# " << d.name << " definitions\n\n" << d.doc << "\n";
  if (!d.constants.empty()) {
    o << "\n## Constants\n\n| name | width | value | meaning |\n|---|---|---|---|\n";
    for (const auto& c : d.constants)
      o << "| `" << c.name << "` | " << c.width << " | " << c.value << " | " << c.doc << " |\n";
  }
  for (const auto& e : d.enums) {
    o << "\n## `" << e.name << "` (" << e.width << " bits; SV `" << e.sv_type << "`, C++ `" << e.cpp_name
      << "`)\n\n" << e.doc << "\n\n| value | name | meaning |\n|---|---|---|\n";
    for (const auto& v : e.values) o << "| " << v.value << " | `" << v.name << "` | " << v.doc << " |\n";
  }
  return o.str();
}

void write_if_changed(const std::string& path, const std::string& content) {
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream old;
      old << in.rdbuf();
      if (old.str() == content) return;
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw DefsError(path + ": cannot write");
  out << content;
  if (!out) throw DefsError(path + ": write failed");
}

}  // namespace

int main(int argc, char** argv) {
  std::string input;
  std::map<std::string, std::string> outputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--sv" || a == "--cpp" || a == "--md") && i + 1 < argc) {
      outputs[a] = argv[++i];
    } else if (!a.empty() && a[0] != '-' && input.empty()) {
      input = a;
    } else {
      std::cerr << "gendefs: unexpected argument '" << a << "'\n"
                << "usage: gendefs DEFS.json [--sv OUT.sv] [--cpp OUT.h] [--md OUT.md]\n";
      return 2;
    }
  }
  if (input.empty()) {
    std::cerr << "usage: gendefs DEFS.json [--sv OUT.sv] [--cpp OUT.h] [--md OUT.md]\n";
    return 2;
  }
  try {
    Defs d = Reader(input).read();
    if (outputs.count("--sv")) write_if_changed(outputs["--sv"], sv(d));
    if (outputs.count("--cpp")) write_if_changed(outputs["--cpp"], cpp(d));
    if (outputs.count("--md")) write_if_changed(outputs["--md"], md(d));
  } catch (const DefsError& e) {
    std::cerr << "gendefs: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
