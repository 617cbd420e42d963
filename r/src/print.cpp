// Printing as torch for R does, which prints what libtorch's operator<< prints: one number
// format for the whole tensor (integers, fixed with 4 decimals, fixed with a common scale
// factor, or scientific), matrices split into column blocks for an 80-character line, and
// tensors of more dims as a sequence of (i,j,.,.) matrices. The footer names the device and
// libtorch's type name: [ CPUFloatType{3,3} ].
#include <cmath>
#include <iomanip>
#include <sstream>

#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

constexpr int64_t kLineWidth = 80;

struct NumberFormat {
  double scale = 1;
  int width = 0;
  enum { Default, Fixed, Scientific } style = Default;
};

std::ostream& use_format(std::ostream& out, const NumberFormat& f) {
  if (f.style == NumberFormat::Fixed) out << std::fixed << std::setprecision(4);
  if (f.style == NumberFormat::Scientific) out << std::scientific << std::setprecision(4);
  if (f.style == NumberFormat::Default) out.unsetf(std::ios_base::floatfield);
  return out;
}

// The choice libtorch makes from the magnitudes of the finite values (Formatting.cpp).
NumberFormat choose_format(const double* v, int64_t n) {
  NumberFormat f;
  bool integral = true;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(v[i]) && v[i] != std::ceil(v[i])) {
      integral = false;
      break;
    }
  int64_t first = 0;
  while (first < n && !std::isfinite(v[first])) ++first;
  double exp_min = 1, exp_max = 1;
  if (first < n) {
    double lo = std::fabs(v[first]), hi = std::fabs(v[first]);
    for (int64_t i = first; i < n; ++i) {
      const double z = std::fabs(v[i]);
      if (!std::isfinite(z)) continue;
      lo = std::min(lo, z);
      if (v[i] > hi) hi = z;  // libtorch compares the signed value here; kept for identical output
    }
    exp_min = lo != 0 ? std::floor(std::log10(lo)) + 1 : 1;
    exp_max = hi != 0 ? std::floor(std::log10(hi)) + 1 : 1;
  }
  if (integral) {
    if (exp_max > 9) {
      f.width = 11, f.style = NumberFormat::Scientific;
    } else {
      f.width = static_cast<int>(exp_max) + 1, f.style = NumberFormat::Default;
    }
  } else if (exp_max - exp_min > 4) {
    f.width = std::fabs(exp_max) > 99 || std::fabs(exp_min) > 99 ? 12 : 11;
    f.style = NumberFormat::Scientific;
  } else if (exp_max > 5 || exp_max < 0) {
    f.width = 7, f.scale = std::pow(10, exp_max - 1), f.style = NumberFormat::Fixed;
  } else {
    f.width = exp_max == 0 ? 7 : static_cast<int>(exp_max) + 6;
    f.style = NumberFormat::Fixed;
  }
  return f;
}

void print_scale(std::ostream& out, double scale) {
  std::ostringstream s;
  s << scale << " *";
  out << s.str() << "\n";
}

// rows x cols doubles, row-major.
void print_matrix(std::ostream& out, const double* v, int64_t rows, int64_t cols, int64_t indent) {
  const NumberFormat f = choose_format(v, rows * cols);
  use_format(out, f);
  const std::string pad(indent, ' ');
  out << pad;
  const int64_t per_line = std::max<int64_t>((kLineWidth - indent) / (f.width + 1), 1);
  for (int64_t first = 0; first < cols;) {
    const int64_t last = std::min(first + per_line, cols) - 1;
    if (per_line < cols) {
      if (first != 0) out << "\n";
      out << "Columns " << first + 1 << " to " << last + 1 << pad;
    }
    if (f.scale != 1) {
      print_scale(out, f.scale);
      out << pad;
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = first; c <= last; ++c) {
        out << std::setw(f.width) << v[r * cols + c] / f.scale;
        if (c == last) {
          out << "\n";
          if (r != rows - 1) out << pad << (f.scale != 1 ? " " : "");
        } else {
          out << " ";
        }
      }
    }
    first = last + 1;
  }
}

// libtorch's ScalarType names, which torch for R prints: int8 is Char and int16 is Short.
const char* scalar_type_name(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "Bool";
    case DType::UInt8:
      return "Byte";
    case DType::Int8:
      return "Char";
    case DType::Int16:
      return "Short";
    case DType::Int32:
      return "Int";
    case DType::Int64:
      return "Long";
    case DType::Float16:
      return "Half";
    case DType::BFloat16:
      return "BFloat16";
    case DType::Float32:
      return "Float";
    case DType::Float64:
      return "Double";
    case DType::Float8E4M3FN:
      return "Float8_e4m3fn";
    case DType::Float8E5M2:
      return "Float8_e5m2";
    case DType::Complex64:
      return "ComplexFloat";
    case DType::Complex128:
      return "ComplexDouble";
  }
  return "Unknown";
}

std::string type_name(const Tensor& t) {
  return std::string(t.device().is_cuda() ? "CUDA" : "CPU") + scalar_type_name(t.dtype()) + "Type";
}

}  // namespace

// list(body, footer): the values as lines of text, and "[ CPUFloatType{2,3} ]".
extern "C" SEXP rc_format(SEXP x) {
  RCUDA_BEGIN
  NoGradGuard no_grad;
  const Tensor& t = unwrap(x);
  // Complex values are formatted by R from as_array() (R/print.R): only the footer comes here.
  const bool complex_values = is_complex(t.dtype());
  Tensor d = complex_values ? Tensor() : contiguous(to(t, Device(), DType::Float64));
  const double* v = complex_values ? nullptr : d.data<double>();
  const Shape& s = t.shape();
  std::ostringstream body;
  if (complex_values) {
    // (no body)
  } else if (s.empty()) {
    body << v[0] << "\n";
  } else if (t.numel() > 0 && s.size() == 1) {
    const NumberFormat f = choose_format(v, s[0]);
    if (f.scale != 1) print_scale(body, f.scale);
    use_format(body, f);
    for (int64_t i = 0; i < s[0]; ++i) body << std::setw(f.width) << v[i] / f.scale << "\n";
  } else if (t.numel() > 0 && s.size() == 2) {
    print_matrix(body, v, s[0], s[1], 0);
  } else if (t.numel() > 0) {
    // Leading dims are walked like an odometer, the first dim fastest (as libtorch does).
    const int64_t rows = s[s.size() - 2], cols = s.back(),
                  lead = static_cast<int64_t>(s.size()) - 2;
    std::vector<int64_t> counter(lead, 0);
    Strides strides = contiguous_strides(s);
    int64_t blocks = 1;
    for (int64_t i = 0; i < lead; ++i) blocks *= s[i];
    for (int64_t b = 0; b < blocks; ++b) {
      if (b > 0) body << "\n";
      body << "(";
      int64_t offset = 0;
      for (int64_t i = 0; i < lead; ++i) {
        body << counter[i] + 1 << ",";
        offset += counter[i] * strides[i];
      }
      body << ".,.) = \n";
      print_matrix(body, v + offset, rows, cols, 1);
      for (int64_t i = 0; i < lead; ++i) {
        if (++counter[i] < s[i]) break;
        counter[i] = 0;
      }
    }
  }
  std::ostringstream footer;
  footer << "[ " << type_name(t) << "{";
  for (size_t i = 0; i < s.size(); ++i) footer << (i ? "," : "") << s[i];
  footer << "} ]";
  cpp11::writable::strings out({body.str(), footer.str()});
  return out;
  RCUDA_END
}
