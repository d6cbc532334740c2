// AXI4-Lite master bus-functional model, advanced one clock at a time by whoever owns the clock.
// A transaction is queued with start_read/start_write; drive() sets the model's s_axil_* inputs
// before the rising edge and sample() watches the handshakes after it. Both write channels are
// raised together and each drops once its handshake happened, as AXI allows; the response is
// accepted the cycle it is valid. The model type is the board top (rtl/board/mxtb_board.sv), whose
// firmware processor's port (s_fw_*) the master drives, or a verilated controller's s_axil_* port.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>

namespace mxtb::sim {

struct AxilResult {
  uint32_t data = 0;  // read data
  uint8_t resp = 0;   // 0 OKAY, 2 SLVERR, 3 DECERR
  uint64_t cycles = 0;
};

// The AXI4-Lite slave port of a model a master drives: the board top's firmware port, else s_axil_*.
template <class M, class = void>
struct HasFirmwarePort : std::false_type {};
template <class M>
struct HasFirmwarePort<M, std::void_t<decltype(std::declval<M&>().s_fw_awaddr)>> : std::true_type {};

template <class M>
class AxilMaster {
 public:
  bool busy() const { return kind_ != Kind::Idle; }

  void start_write(uint32_t addr, uint32_t data) {
    kind_ = Kind::Write;
    addr_ = addr;
    data_ = data;
    aw_done_ = w_done_ = false;
    cycles_ = 0;
  }

  void start_read(uint32_t addr) {
    kind_ = Kind::Read;
    addr_ = addr;
    ar_done_ = false;
    cycles_ = 0;
  }

  // Before the rising edge: the inputs, then the handshakes the edge takes. For a model whose
  // readies do not follow its inputs within the cycle (the controller's own port).
  void drive(M& m) {
    set_inputs(m);
    observe(m);
  }
  // The same in two halves, for the board top, whose arbiter grants within the cycle: its readies
  // follow the valids, so the caller evaluates the model between them when set_inputs() changed one.
  bool set_inputs(M& m) {
    if constexpr (HasFirmwarePort<M>::value)
      drive_port(m.s_fw_awvalid, m.s_fw_awaddr, m.s_fw_wvalid, m.s_fw_wdata, m.s_fw_wstrb, m.s_fw_bready, m.s_fw_arvalid,
                 m.s_fw_araddr, m.s_fw_rready);
    else
      drive_port(m.s_axil_awvalid, m.s_axil_awaddr, m.s_axil_wvalid, m.s_axil_wdata, m.s_axil_wstrb, m.s_axil_bready,
                 m.s_axil_arvalid, m.s_axil_araddr, m.s_axil_rready);
    const bool changed = driven_ != last_driven_;
    last_driven_ = driven_;
    return changed;
  }
  void observe(const M& m) {
    if constexpr (HasFirmwarePort<M>::value)
      see(m.s_fw_awready, m.s_fw_wready, m.s_fw_bvalid, m.s_fw_bresp, m.s_fw_arready, m.s_fw_rvalid, m.s_fw_rdata, m.s_fw_rresp);
    else
      see(m.s_axil_awready, m.s_axil_wready, m.s_axil_bvalid, m.s_axil_bresp, m.s_axil_arready, m.s_axil_rvalid,
          m.s_axil_rdata, m.s_axil_rresp);
  }

  // After the rising edge. Returns the result the cycle the transaction completes.
  std::optional<AxilResult> sample() {
    if (kind_ == Kind::Idle) return std::nullopt;
    ++cycles_;
    if (kind_ == Kind::Write) {
      aw_done_ = aw_done_ || aw_fire_;
      w_done_ = w_done_ || w_fire_;
      if (b_fire_) {
        kind_ = Kind::Idle;
        return AxilResult{0, b_resp_, cycles_};
      }
    } else {
      ar_done_ = ar_done_ || ar_fire_;
      if (r_fire_) {
        kind_ = Kind::Idle;
        return AxilResult{r_data_, r_resp_, cycles_};
      }
    }
    return std::nullopt;
  }

 private:
  template <class B, class A, class D, class S>
  void drive_port(B& awvalid, A& awaddr, B& wvalid, D& wdata, S& wstrb, B& bready, B& arvalid, A& araddr, B& rready) {
    awvalid = kind_ == Kind::Write && !aw_done_;
    awaddr = static_cast<A>(addr_);
    wvalid = kind_ == Kind::Write && !w_done_;
    wdata = data_;
    wstrb = 0xF;
    bready = kind_ == Kind::Write;
    arvalid = kind_ == Kind::Read && !ar_done_;
    araddr = static_cast<A>(addr_);
    rready = kind_ == Kind::Read;
    driven_ = {static_cast<bool>(awvalid), static_cast<bool>(wvalid), static_cast<bool>(bready), static_cast<bool>(arvalid),
               static_cast<bool>(rready), addr_, data_};
  }
  // Handshakes are decided by the values present at the edge.
  template <class B, class R, class D>
  void see(B awready, B wready, B bvalid, R bresp, B arready, B rvalid, D rdata, R rresp) {
    aw_fire_ = driven_.awvalid && awready;
    w_fire_ = driven_.wvalid && wready;
    b_fire_ = bvalid && driven_.bready;
    ar_fire_ = driven_.arvalid && arready;
    r_fire_ = rvalid && driven_.rready;
    b_resp_ = bresp;
    r_data_ = rdata;
    r_resp_ = rresp;
  }

  struct Driven {
    bool awvalid = false, wvalid = false, bready = false, arvalid = false, rready = false;
    uint32_t addr = 0, data = 0;
    bool operator!=(const Driven& o) const {
      return awvalid != o.awvalid || wvalid != o.wvalid || bready != o.bready || arvalid != o.arvalid || rready != o.rready ||
             addr != o.addr || data != o.data;
    }
  };
  Driven driven_{}, last_driven_{true};  // last_driven_ differs at first: the first drive settles

  enum class Kind { Idle, Write, Read };
  Kind kind_ = Kind::Idle;
  uint32_t addr_ = 0, data_ = 0;
  bool aw_done_ = false, w_done_ = false, ar_done_ = false;
  bool aw_fire_ = false, w_fire_ = false, b_fire_ = false, ar_fire_ = false, r_fire_ = false;
  uint8_t b_resp_ = 0, r_resp_ = 0;
  uint32_t r_data_ = 0;
  uint64_t cycles_ = 0;
};

}  // namespace mxtb::sim
