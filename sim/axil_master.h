// AXI4-Lite master bus-functional model, advanced one clock at a time by whoever owns the clock.
// A transaction is queued with start_read/start_write; drive() sets the model's s_axil_* inputs
// before the rising edge and sample() watches the handshakes after it. Both write channels are
// raised together and each drops once its handshake happened, as AXI allows; the response is
// accepted the cycle it is valid. The model type is any verilated top with the s_axil_* ports.
#pragma once

#include <cstdint>
#include <optional>

namespace mxtb::sim {

struct AxilResult {
  uint32_t data = 0;  // read data
  uint8_t resp = 0;   // 0 OKAY, 2 SLVERR, 3 DECERR
  uint64_t cycles = 0;
};

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

  // Before the rising edge.
  void drive(M& m) {
    m.s_axil_awvalid = kind_ == Kind::Write && !aw_done_;
    m.s_axil_awaddr = addr_;
    m.s_axil_wvalid = kind_ == Kind::Write && !w_done_;
    m.s_axil_wdata = data_;
    m.s_axil_wstrb = 0xF;
    m.s_axil_bready = kind_ == Kind::Write;
    m.s_axil_arvalid = kind_ == Kind::Read && !ar_done_;
    m.s_axil_araddr = addr_;
    m.s_axil_rready = kind_ == Kind::Read;
    // Handshakes are decided by the values present at the edge.
    aw_fire_ = m.s_axil_awvalid && m.s_axil_awready;
    w_fire_ = m.s_axil_wvalid && m.s_axil_wready;
    b_fire_ = m.s_axil_bvalid && m.s_axil_bready;
    ar_fire_ = m.s_axil_arvalid && m.s_axil_arready;
    r_fire_ = m.s_axil_rvalid && m.s_axil_rready;
    b_resp_ = m.s_axil_bresp;
    r_data_ = m.s_axil_rdata;
    r_resp_ = m.s_axil_rresp;
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
