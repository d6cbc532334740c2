// gendefs: turns one machine-readable definitions file (e.g. rtl/link/link_defs.json) into the
// SystemVerilog package, the C++ header and the Markdown table, so the three never drift apart.
//
//   gendefs DEFS.json --sv OUT.sv --cpp OUT.h --md OUT.md
//
// Every output is written only when its content changes, so rebuilding does not retrigger
// verilation. Errors name the file and the JSON path of the offending entry.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <iomanip>
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
  std::string text;  // optional short phrase for messages (describe()); the name when absent
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

// A field of a 32-bit register: bits msb..lsb.
struct Field {
  std::string name, doc;
  int msb, lsb;
  uint64_t reset;
};

// A 32-bit register, or a window of `count` consecutive registers (count > 1) sharing one layout.
// read, write: when an access is answered (a file with "register_answers" only; "" where the
// access does not allow it).
struct Register {
  std::string name, doc, access, read, write;
  uint32_t offset, count;
  uint32_t reset;
  std::vector<Field> fields;
};

struct Defs {
  std::string source, name, doc, sv_package, cpp_namespace;
  std::vector<Constant> constants;
  std::vector<Enum> enums;
  int addr_width = 16;
  bool register_answers = false;  // every register says when a read and a write of it are answered
  std::vector<Register> registers;
};

// "register_answers": when the emulator answers an access of a register of its block, per read and
// per write (protocol/emu_regs.json). Within the board's clock, as block RAM answers; or the
// server's step stops and the simulation thread answers: a read of what only the kernel or the
// wall clock knows, a write that runs simulated time or acts on the server.
const std::vector<std::string> kReadAnswers{"in_clock", "stops_step"};
const std::vector<std::string> kWriteAnswers{"in_clock", "runs_time", "acts_on_server"};

std::string hex(uint64_t v, int digits) {
  std::ostringstream o;
  o << "0x" << std::hex << std::setw(digits) << std::setfill('0') << v;
  return o.str();
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The text between the quotes of a C++ string literal.
std::string cpp_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// last_err -> LastErr
std::string camel(const std::string& s) {
  std::string o;
  bool up = true;
  for (char c : s) {
    if (c == '_') {
      up = true;
    } else {
      o += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      up = false;
    }
  }
  return o;
}

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
          Value val{ident(v, vw, "name"), uint(v, vw, "value"), str(v, vw, "doc"),
                    v.contains("text") ? str(v, vw, "text") : std::string()};
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
    if (j.contains("registers")) read_registers(j, d, unique);
    return d;
  }

  // Offsets are byte addresses, a number or a "0x..." string.
  uint64_t address(const json& j, const std::string& where, const char* key) const {
    if (!j.contains(key)) fail(where, std::string("missing field \"") + key + "\"");
    if (j[key].is_number_unsigned()) return j[key].get<uint64_t>();
    if (j[key].is_string()) {
      static const std::regex re("0x[0-9A-Fa-f]{1,8}");
      std::string s = j[key].get<std::string>();
      if (std::regex_match(s, re)) return std::stoull(s.substr(2), nullptr, 16);
    }
    fail(where + "." + key, "must be a non-negative integer or a \"0x...\" string");
  }

  // "msb:lsb" or "bit".
  std::pair<int, int> bits(const json& f, const std::string& where) const {
    std::string s = str(f, where, "bits");
    static const std::regex re("([0-9]{1,3})(:([0-9]{1,3}))?");
    std::smatch m;
    if (!std::regex_match(s, m, re)) fail(where + ".bits", "\"" + s + "\" is not \"msb:lsb\" or \"bit\"");
    int msb = std::stoi(m[1].str());
    int lsb = m[3].matched ? std::stoi(m[3].str()) : msb;
    if (msb < lsb) fail(where + ".bits", "\"" + s + "\": msb below lsb");
    if (msb > 31) fail(where + ".bits", "\"" + s + "\" goes past bit 31 of a 32-bit register");
    return {msb, lsb};
  }

  // A register's "read" or "write" answer: one of `values` where the file has "register_answers"
  // and the register's access allows it, absent ("") otherwise.
  std::string answer(const json& r, const Defs& d, const Register& reg, const std::string& where, const char* key,
                     const std::vector<std::string>& values) const {
    const bool is_read = key[0] == 'r';
    const bool allowed = is_read ? reg.access != "wo" : reg.access != "ro";
    if (!d.register_answers) {
      if (r.contains(key)) fail(where + "." + key, "an answer, but the file does not set \"register_answers\"");
      return "";
    }
    if (!allowed) {
      if (r.contains(key))
        fail(where + "." + key, "a" + std::string(reg.access == "ro" ? " ro" : " wo") + " register is never " +
                                    (is_read ? "read" : "written") + ": it has no " + key + " answer");
      return "";
    }
    std::string list;
    for (size_t i = 0; i < values.size(); ++i)
      list += (i ? (i + 1 == values.size() ? " or " : ", ") : "") + values[i];
    if (!r.contains(key)) fail(where, std::string("missing field \"") + key + "\" (" + list + ")");
    std::string v = str(r, where, key);
    if (std::find(values.begin(), values.end(), v) == values.end())
      fail(where + "." + key, std::string("unknown ") + key + " answer \"" + v + "\" (" + list + ")");
    return v;
  }

  template <class Unique>
  void read_registers(const json& j, Defs& d, Unique& unique) const {
    if (j.contains("addr_width")) {
      uint64_t w = uint(j, "$", "addr_width");
      if (w < 3 || w > 32) fail("$.addr_width", "must be 3..32, got " + std::to_string(w));
      d.addr_width = static_cast<int>(w);
    }
    if (j.contains("register_answers")) {
      if (!j["register_answers"].is_boolean()) fail("$.register_answers", "must be true or false");
      d.register_answers = j["register_answers"].get<bool>();
    }
    if (!j["registers"].is_array()) fail("$.registers", "must be an array");
    static const std::set<std::string> kAccess{"ro", "rw", "wo", "w1c", "rc"};
    std::set<std::string> sv_names, cpp_names;
    const uint64_t space = uint64_t{1} << d.addr_width;
    for (size_t i = 0; i < j["registers"].size(); ++i) {
      const json& r = j["registers"][i];
      std::string where = "$.registers[" + std::to_string(i) + "]";
      Register reg;
      reg.name = ident(r, where, "name");
      where += " (" + reg.name + ")";
      unique(reg.name, where);
      if (!cpp_names.insert(lower(reg.name)).second)
        fail(where, "name \"" + reg.name + "\" differs from another register only in case");
      reg.doc = str(r, where, "doc");
      reg.access = str(r, where, "access");
      if (!kAccess.count(reg.access))
        fail(where + ".access", "unknown access \"" + reg.access + "\" (ro, rw, wo, w1c or rc)");
      reg.read = answer(r, d, reg, where, "read", kReadAnswers);
      reg.write = answer(r, d, reg, where, "write", kWriteAnswers);
      uint64_t offset = address(r, where, "offset");
      uint64_t count = r.contains("count") ? uint(r, where, "count") : 1;
      if (count < 1) fail(where + ".count", "must be at least 1");
      if (offset % 4) fail(where + ".offset", hex(offset, 4) + " is not a multiple of 4");
      if (offset + 4 * count > space)
        fail(where + ".offset", hex(offset, 4) + " + " + std::to_string(count) + " words is past the " +
                                    std::to_string(d.addr_width) + "-bit address space");
      reg.offset = static_cast<uint32_t>(offset);
      reg.count = static_cast<uint32_t>(count);
      for (const Register& o : d.registers) {
        uint64_t a0 = reg.offset, a1 = a0 + 4 * uint64_t{reg.count}, b0 = o.offset, b1 = b0 + 4 * uint64_t{o.count};
        if (a0 < b1 && b0 < a1)
          fail(where + ".offset", hex(a0, 4) + ".." + hex(a1 - 1, 4) + " overlaps register \"" + o.name + "\" at " +
                                      hex(b0, 4) + ".." + hex(b1 - 1, 4));
      }
      if (!r.contains("fields") || !r["fields"].is_array() || r["fields"].empty())
        fail(where + ".fields", "must be a non-empty array");
      uint64_t used = 0;
      std::set<std::string> field_names;
      reg.reset = 0;
      for (size_t k = 0; k < r["fields"].size(); ++k) {
        const json& f = r["fields"][k];
        std::string fw = where + ".fields[" + std::to_string(k) + "]";
        Field fld;
        fld.name = ident(f, fw, "name");
        fw += " (" + fld.name + ")";
        fld.doc = str(f, fw, "doc");
        auto [msb, lsb] = bits(f, fw);
        fld.msb = msb;
        fld.lsb = lsb;
        fld.reset = f.contains("reset") ? uint(f, fw, "reset") : 0;
        int width = msb - lsb + 1;
        fits(fld.reset, width, fw + ".reset");
        if (!field_names.insert(lower(fld.name)).second)
          fail(fw + ".name", "field \"" + fld.name + "\" is defined twice in " + reg.name);
        uint64_t mask = ((uint64_t{1} << width) - 1) << lsb;
        if (used & mask) {
          for (const Field& o : reg.fields)
            if ((((uint64_t{1} << (o.msb - o.lsb + 1)) - 1) << o.lsb) & mask)
              fail(fw + ".bits", "bits " + std::to_string(msb) + ":" + std::to_string(lsb) + " overlap field \"" +
                                     o.name + "\" (" + std::to_string(o.msb) + ":" + std::to_string(o.lsb) + ")");
        }
        used |= mask;
        reg.reset |= static_cast<uint32_t>(fld.reset << lsb);
        std::string svn = upper(reg.name) + "_" + upper(fld.name);
        if (!sv_names.insert(svn).second) fail(fw, "generated name " + svn + " clashes with another");
        reg.fields.push_back(fld);
      }
      if (!sv_names.insert(upper(reg.name)).second) fail(where, "generated name " + upper(reg.name) + " clashes with another");
      d.registers.push_back(std::move(reg));
    }
  }

 private:
  std::string file_;
};

std::string banner(const Defs& d, const char* comment) {
  return std::string(comment) + " Generated by tools/gendefs from " + d.name +
         " definitions. Do not edit: change the JSON source instead.\n";
}

// Access rules for whole blocks, which a bus master checks before the first word moves (IPbus:
// a refused block access changes nothing): for each word offset, how many consecutive words from
// it are registers that may be read (written), saturated at 255, the longest IPbus transaction.
// A window shares one access, so a run falls by one per word inside it: one range test per
// register instead of a table of every word.
void sv_access_runs(std::ostringstream& o, const Defs& d) {
  std::vector<const Register*> regs;
  for (const auto& r : d.registers) regs.push_back(&r);
  std::sort(regs.begin(), regs.end(), [](const Register* a, const Register* b) { return a->offset < b->offset; });
  const int word_bits = d.addr_width - 2;
  for (const char* kind : {"read", "write"}) {
    const bool read = kind[0] == 'r';
    auto allows = [&](const Register& r) { return read ? r.access != "wo" : r.access != "ro"; };
    std::vector<uint64_t> run(regs.size(), 0);  // unsaturated, from the register's first word
    for (size_t i = regs.size(); i-- > 0;) {
      if (!allows(*regs[i])) continue;
      run[i] = regs[i]->count;
      if (i + 1 < regs.size() && regs[i + 1]->offset == regs[i]->offset + 4 * regs[i]->count) run[i] += run[i + 1];
    }
    o << "\n  // Consecutive words from word offset w that are registers allowing a " << kind
      << ", saturated at 255 (0: none).\n"
      << "  function automatic logic [7:0] " << kind << "_run(input logic [" << word_bits - 1 << ":0] w);\n"
      << "    logic [" << word_bits << ":0] r;\n    r = '0;\n";
    for (size_t i = 0; i < regs.size(); ++i) {
      if (!run[i]) continue;
      const uint32_t lo = regs[i]->offset / 4, hi = lo + regs[i]->count - 1;
      if (lo == hi)
        o << "    if (w == " << word_bits << "'d" << lo << ") r = " << word_bits + 1 << "'d" << run[i] << ";\n";
      else
        o << "    if (w >= " << word_bits << "'d" << lo << " && w <= " << word_bits << "'d" << hi << ") r = "
          << word_bits + 1 << "'d" << run[i] << " - {1'b0, w - " << word_bits << "'d" << lo << "};\n";
    }
    o << "    " << kind << "_run = r > " << word_bits + 1 << "'d255 ? 8'd255 : r[7:0];\n  endfunction\n";
  }
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
  if (!d.registers.empty()) {
    o << "\n  // Register map: byte offsets in a " << d.addr_width
      << "-bit address space of 32-bit registers. X_COUNT is the number of words of a window.\n"
      << "  // A block uses a few of these: Verilator's UNUSEDPARAM stays off for the register map.\n"
      << "  // verilator lint_off UNUSEDPARAM\n"
      << "  localparam int REG_ADDR_WIDTH = " << d.addr_width << ";\n";
    for (const auto& r : d.registers) {
      std::string n = upper(r.name);
      o << "\n  // " << r.name << " (" << r.access << (r.count > 1 ? ", window of " + std::to_string(r.count) : std::string())
        << "): " << r.doc << "\n";
      o << "  localparam logic [" << d.addr_width - 1 << ":0] " << n << "_OFFSET = " << d.addr_width << "'h"
        << hex(r.offset, (d.addr_width + 3) / 4).substr(2) << ";\n";
      if (r.count > 1) o << "  localparam int " << n << "_COUNT = " << r.count << ";\n";
      o << "  localparam logic [31:0] " << n << "_RESET = 32'h" << hex(r.reset, 8).substr(2) << ";\n";
      for (const auto& f : r.fields) {
        std::string fn = n + "_" + upper(f.name);
        int w = f.msb - f.lsb + 1;
        uint64_t mask = ((uint64_t{1} << w) - 1) << f.lsb;
        o << "  localparam int " << fn << "_LSB = " << f.lsb << ";\n"
          << "  localparam int " << fn << "_WIDTH = " << w << ";\n"
          << "  localparam logic [31:0] " << fn << "_MASK = 32'h" << hex(mask, 8).substr(2) << ";\n"
          << "  localparam logic [" << w - 1 << ":0] " << fn << "_RESET = " << w << "'d" << f.reset << ";\n";
      }
    }
    o << "  // verilator lint_on UNUSEDPARAM\n";
    sv_access_runs(o, d);
  }
  o << "\nendpackage\n";
  return o.str();
}

// in_clock -> InClock; "" (the access is not allowed) -> None.
std::string answer_name(const std::string& a) { return a.empty() ? "None" : camel(a); }

// "register_answers": the C++ side of a register's "read" and "write".
std::string answer_enums(const Defs& d) {
  if (!d.register_answers) return "";
  std::ostringstream o;
  o << "// When an access of a register is answered (\"read\", \"write\"): within the board's clock, as\n"
    << "// block RAM answers, or with the server's step stopped. None: the access is not allowed.\n"
    << "enum class ReadAnswer : uint8_t { None";
  for (const auto& a : kReadAnswers) o << ", " << camel(a);
  o << " };\nenum class WriteAnswer : uint8_t { None";
  for (const auto& a : kWriteAnswers) o << ", " << camel(a);
  o << " };\n\n";
  for (const char* kind : {"Read", "Write"}) {
    const auto& values = kind[0] == 'R' ? kReadAnswers : kWriteAnswers;
    o << "inline constexpr std::string_view to_string(" << kind << "Answer a) {\n  switch (a) {\n"
      << "    case " << kind << "Answer::None: return \"none\";\n";
    for (const auto& a : values) o << "    case " << kind << "Answer::" << camel(a) << ": return \"" << a << "\";\n";
    o << "  }\n  return \"?\";\n}\n\n";
  }
  return o.str();
}

void cpp_registers(const Defs& d, std::ostringstream& o) {
  o << "\n// ---- Register map: byte offsets in a " << d.addr_width
    << "-bit address space of 32-bit registers ----\n\n"
    << "enum class Access : uint8_t { RO, RW, WO, W1C, RC };\n\n"
    << "inline constexpr std::string_view to_string(Access a) {\n"
    << "  switch (a) {\n    case Access::RO: return \"ro\";\n    case Access::RW: return \"rw\";\n"
    << "    case Access::WO: return \"wo\";\n    case Access::W1C: return \"w1c\";\n    case Access::RC: return \"rc\";\n"
    << "  }\n  return \"?\";\n}\n\n"
    << answer_enums(d)
    << "struct FieldInfo {\n  std::string_view name;\n  unsigned lsb, width;\n  uint32_t mask;  // in place\n"
    << "  uint32_t reset;\n  constexpr uint32_t get(uint32_t reg) const { return (reg & mask) >> lsb; }\n"
    << "  constexpr uint32_t set(uint32_t reg, uint32_t v) const { return (reg & ~mask) | ((v << lsb) & mask); }\n};\n\n"
    << "struct RegInfo {\n  std::string_view name;\n  uint32_t offset;  // byte address of word 0\n"
    << "  uint32_t count;   // words: 1, or the window's size\n  Access access;\n  uint32_t reset;\n"
    << "  const FieldInfo* fields;\n  std::size_t n_fields;\n  std::string_view doc;\n"
    << (d.register_answers ? "  ReadAnswer read;    // when a read is answered\n  WriteAnswer write;  // when a write is answered\n" : "")
    << "  constexpr uint32_t addr(uint32_t i = 0) const { return offset + 4 * i; }\n};\n\n"
    << "inline constexpr int kAddrWidth = " << d.addr_width << ";\n\n"
    << "// One namespace per register: kOffset, kReset, kAccess, " << (d.register_answers ? "kRead, kWrite, " : "")
    << "(windows: kCount, addr(i)), and per field\n"
    << "// k<Field>Shift, k<Field>Width, k<Field>Mask (in place), k<Field>Reset; kFields lists them.\n"
    << "namespace reg {\n";
  auto access = [](const std::string& a) { return "Access::" + upper(a); };
  for (const auto& r : d.registers) {
    o << "\n// " << r.name << " (" << r.access << (r.count > 1 ? ", window of " + std::to_string(r.count) : std::string())
      << "): " << r.doc << "\nnamespace " << lower(r.name) << " {\n"
      << "inline constexpr uint32_t kOffset = " << hex(r.offset, 4) << "u;\n"
      << "inline constexpr uint32_t kCount = " << r.count << "u;\n"
      << "inline constexpr uint32_t kReset = " << hex(r.reset, 8) << "u;\n"
      << "inline constexpr Access kAccess = " << access(r.access) << ";\n"
      << (d.register_answers ? "inline constexpr ReadAnswer kRead = ReadAnswer::" + answer_name(r.read) +
                                   ";\ninline constexpr WriteAnswer kWrite = WriteAnswer::" + answer_name(r.write) + ";\n"
                             : std::string())
      << "constexpr uint32_t addr(uint32_t i = 0) { return kOffset + 4 * i; }\n";
    for (const auto& f : r.fields) {
      int w = f.msb - f.lsb + 1;
      uint64_t mask = ((uint64_t{1} << w) - 1) << f.lsb;
      std::string c = camel(f.name);
      o << "// " << f.name << " [" << f.msb << ":" << f.lsb << "]: " << f.doc << "\n"
        << "inline constexpr unsigned k" << c << "Shift = " << f.lsb << ";\n"
        << "inline constexpr unsigned k" << c << "Width = " << w << ";\n"
        << "inline constexpr uint32_t k" << c << "Mask = " << hex(mask, 8) << "u;\n"
        << "inline constexpr uint32_t k" << c << "Reset = " << f.reset << "u;\n";
    }
    o << "inline constexpr FieldInfo kFields[] = {\n";
    for (const auto& f : r.fields) {
      std::string c = camel(f.name);
      o << "    {\"" << f.name << "\", k" << c << "Shift, k" << c << "Width, k" << c << "Mask, k" << c << "Reset},\n";
    }
    o << "};\n}  // namespace " << lower(r.name) << "\n";
  }
  o << "\n}  // namespace reg\n\n// Every register in address order, for name lookup and a typed register API.\n"
    << "inline constexpr RegInfo kRegisters[] = {\n";
  for (const auto& r : d.registers) {
    std::string ns = "reg::" + lower(r.name) + "::";
    const std::string doc = cpp_escape(r.doc);
    o << "    {\"" << r.name << "\", " << ns << "kOffset, " << ns << "kCount, " << ns << "kAccess, " << ns << "kReset, "
      << ns << "kFields, " << r.fields.size() << ", \"" << doc << "\""
      << (d.register_answers ? ", " + ns + "kRead, " + ns + "kWrite" : std::string()) << "},\n";
  }
  o << "};\n\ninline constexpr std::size_t kNumRegisters = " << d.registers.size() << ";\n\n"
    << "// The register (or window) named `name`, or nullptr.\n"
    << "inline constexpr const RegInfo* find_register(std::string_view name) {\n"
    << "  for (const RegInfo& r : kRegisters)\n    if (r.name == name) return &r;\n  return nullptr;\n}\n\n"
    << "// The register (or window) holding byte address `addr`, or nullptr.\n"
    << "inline constexpr const RegInfo* register_at(uint32_t addr) {\n"
    << "  for (const RegInfo& r : kRegisters)\n    if (addr >= r.offset && addr < r.offset + 4 * r.count) return &r;\n"
    << "  return nullptr;\n}\n";
}

std::string cpp(const Defs& d) {
  std::ostringstream o;
  o << banner(d, "//") << "// " << d.doc << "\n#pragma once\n\n#include <cstdint>\n#include <optional>\n"
    << (d.registers.empty() ? "" : "#include <cstddef>\n") << "#include <string_view>\n\nnamespace " << d.cpp_namespace << " {\n";
  for (const auto& c : d.constants) {
    o << "\n// " << c.doc << "\ninline constexpr " << (c.width <= 32 ? "uint32_t" : "uint64_t") << " k" << c.name << " = "
      << c.value << "u;\n";
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
    o << "// A short phrase for messages: the value's \"text\" in the JSON, else its name.\n";
    o << "inline std::string_view describe(" << e.cpp_name << " v) {\n  switch (v) {\n";
    for (const auto& v : e.values)
      o << "    case " << e.cpp_name << "::" << v.name << ": return \"" << cpp_escape(v.text.empty() ? v.name : v.text) << "\";\n";
    o << "  }\n  return \"?\";\n}\n\n";
    o << "inline std::optional<" << e.cpp_name << "> to_" << e.name << "(uint64_t raw) {\n  switch (raw) {\n";
    for (const auto& v : e.values)
      o << "    case " << v.value << ": return " << e.cpp_name << "::" << v.name << ";\n";
    o << "    default: return std::nullopt;\n  }\n}\n";
  }
  if (!d.registers.empty()) cpp_registers(d, o);
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
  if (!d.registers.empty()) {
    o << "\n## Registers\n\n32-bit registers on a " << d.addr_width
      << "-bit byte address space. Access: `ro` read-only, `rw` read/write, `wo` write-only (reads "
         "give 0), `w1c` write 1 to clear, `rc` reading clears (or pops). A window is an array of "
         "consecutive words with one layout.";
    if (d.register_answers)
      o << " Read, write: when the emulator answers the access. `in_clock`: within the board's clock, as "
           "block RAM answers (the register is state the block holds); every other answer stops the "
           "server's step and is given by the simulation thread: `stops_step` (a read of what the kernel "
           "or the wall clock knows), `runs_time` (a write that runs simulated time before it is answered), "
           "`acts_on_server` (a write that acts on the server, its job or the kernel); — where the access "
           "is not allowed.";
    o << "\n\n| offset | name | access | words | reset | " << (d.register_answers ? "read | write | " : "")
      << "meaning |\n|---|---|---|---|---|" << (d.register_answers ? "---|---|" : "") << "---|\n";
    auto shown = [](const std::string& a) { return a.empty() ? std::string("—") : "`" + a + "`"; };
    for (const auto& r : d.registers) {
      std::string range = hex(r.offset, 4);
      if (r.count > 1) range += "..." + hex(r.offset + 4 * r.count - 4, 4);
      o << "| " << range << " | [`" << r.name << "`](#" << lower(r.name) << ") | " << r.access << " | " << r.count
        << " | " << hex(r.reset, 8) << " | "
        << (d.register_answers ? shown(r.read) + " | " + shown(r.write) + " | " : std::string()) << r.doc << " |\n";
    }
    for (const auto& r : d.registers) {
      o << "\n### " << r.name << "\n\n" << hex(r.offset, 4) << ", " << r.access
        << (r.count > 1 ? ", window of " + std::to_string(r.count) + " words" : std::string())
        << (d.register_answers ? "; read " + shown(r.read) + ", write " + shown(r.write) : std::string()) << ". " << r.doc
        << "\n\n| bits | field | reset | meaning |\n|---|---|---|---|\n";
      for (const auto& f : r.fields) {
        o << "| " << f.msb;
        if (f.msb != f.lsb) o << ":" << f.lsb;
        o << " | `" << f.name << "` | " << f.reset << " | " << f.doc << " |\n";
      }
    }
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
