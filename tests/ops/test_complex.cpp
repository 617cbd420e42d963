// Complex tensors (rcuda/ops/complex.h): the views between complex tensors and their real
// pairs, conversions, and the composed arithmetic against std::complex<double> loops, on fresh
// random inputs with broadcasting, non-contiguous views and empty tensors, in complex64 and
// complex128; ops that do not take complex input refuse it by name.
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "ops/complex_reference.h"

namespace rcuda::test {
namespace {

const std::vector<DType>& complex_dtypes() {
  static const std::vector<DType> d = {DType::Complex64, DType::Complex128};
  return d;
}

double complex_tolerance(DType dtype) { return dtype == DType::Complex64 ? 1e-5 : 1e-12; }

TEST(Complex, DTypesNamesSizesAndPromotion) {
  EXPECT_EQ(element_size(DType::Complex64), 8u);
  EXPECT_EQ(element_size(DType::Complex128), 16u);
  EXPECT_STREQ(dtype_name(DType::Complex64), "complex64");
  EXPECT_EQ(dtype_from_name("cfloat"), DType::Complex64);
  EXPECT_EQ(dtype_from_name("cdouble"), DType::Complex128);
  EXPECT_EQ(promote_types(DType::Complex64, DType::Float32), DType::Complex64);
  EXPECT_EQ(promote_types(DType::Complex64, DType::Float64), DType::Complex128);
  EXPECT_EQ(promote_types(DType::Int64, DType::Complex64), DType::Complex64);
  EXPECT_EQ(promote_types(DType::Complex128, DType::Complex64), DType::Complex128);
  EXPECT_EQ(promote_types(DType::Bool, DType::Complex128), DType::Complex128);
  EXPECT_FALSE(is_floating(DType::Complex64));
  EXPECT_FALSE(is_integral(DType::Complex64, true));
}

TEST(Complex, PartsAreViewsOfTheSameStorage) {
  for (DType dtype : complex_dtypes()) {
    const DType part = complex_part_dtype(dtype);
    const Tensor re = random_tensor({3, 4}, part), im = random_tensor({3, 4}, part);
    const Tensor z = complex(re, im);
    EXPECT_EQ(z.dtype(), dtype);
    EXPECT_EQ(z.shape(), (Shape{3, 4}));
    EXPECT_TRUE(all_close(to_doubles(real(z)), to_doubles(re), 0));
    EXPECT_TRUE(all_close(to_doubles(imag(z)), to_doubles(im), 0));
    const Tensor pairs = view_as_real(z);
    EXPECT_EQ(pairs.shape(), (Shape{3, 4, 2}));
    EXPECT_EQ(pairs.strides(), (Strides{8, 2, 1}));
    EXPECT_EQ(pairs.storage(), z.storage());
    // Writing a part writes z.
    copy_(imag(z), zeros_like(im));
    for (const Complex& v : complex_values(z)) EXPECT_EQ(v.imag(), 0.0);
    // A transposed (non-contiguous) complex tensor: strides double, offset doubles.
    const Tensor t = z.transpose(0, 1).narrow(0, 1, 2);
    const Tensor tp = view_as_real(t);
    EXPECT_EQ(tp.strides(), (Strides{2, 8, 1}));
    EXPECT_EQ(tp.offset(), 2);
    const std::vector<Complex> all = complex_values(z), part_view = complex_values(t);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(part_view[i * 3 + j], all[j * 4 + i + 1]);
    // And back: the complex view of the real pairs is z's values.
    EXPECT_TRUE(complex_close(complex_values(view_as_complex(pairs)), complex_values(z), 0));
  }
}

TEST(Complex, ViewAsComplexChecksItsInput) {
  const Tensor x = random_tensor({3, 4}, DType::Float32);
  EXPECT_NE(error_message([&] { view_as_complex(x); }).find("the last dim must have size 2"),
            std::string::npos);
  const Tensor y = random_tensor({2, 3}, DType::Float64).t();  // [3, 2], last stride 3
  EXPECT_NE(error_message([&] { view_as_complex(y); }).find("must have stride 1"),
            std::string::npos);
  const Tensor odd = random_tensor({5, 2}, DType::Float32).view({10}).narrow(0, 1, 8).view({4, 2});
  EXPECT_NE(error_message([&] { view_as_complex(odd); }).find("must be even"), std::string::npos);
  EXPECT_NE(error_message([&] {
              view_as_complex(random_tensor({2}, DType::Int64));
            }).find("expected a float32 or float64 tensor"),
            std::string::npos);
  EXPECT_NE(error_message([&] { view_as_real(x); }).find("expected a complex tensor"),
            std::string::npos);
  EXPECT_NE(error_message([&] { imag(x); }).find("non-complex"), std::string::npos);
  EXPECT_TRUE(real(x).is_same(x));
  EXPECT_NE(error_message([&] {
              complex(random_tensor({2}, DType::Float32), random_tensor({2}, DType::Float64));
            }).find("both float32 or both float64"),
            std::string::npos);
}

TEST(Complex, ConversionsKeepValuesAndRefuseToDropImaginaryParts) {
  const Tensor z = random_complex({2, 3}, DType::Complex64);
  const Tensor w = to(z, DType::Complex128);
  EXPECT_EQ(w.dtype(), DType::Complex128);
  EXPECT_TRUE(complex_close(complex_values(w), complex_values(z), 0));  // float -> double exact
  const Tensor back = to(w.t(), DType::Complex64);  // from a non-contiguous source
  EXPECT_TRUE(complex_close(complex_values(back), complex_values(z.t()), 0));
  const Tensor x = random_tensor({4}, DType::Int32);
  const std::vector<Complex> from_int = complex_values(to(x, DType::Complex128));
  const std::vector<double> ints = to_doubles(x);
  for (size_t i = 0; i < ints.size(); ++i) EXPECT_EQ(from_int[i], Complex(ints[i], 0));
  EXPECT_NE(error_message([&] { to(z, DType::Float32); }).find("would discard the imaginary part"),
            std::string::npos);
  const Tensor f = full({2, 2}, Scalar(1.5), {DType::Complex128, Device()});
  for (const Complex& v : complex_values(f)) EXPECT_EQ(v, Complex(1.5, 0));
  const Tensor c = clone(z.t());
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_TRUE(complex_close(complex_values(c), complex_values(z.t()), 0));
  const Tensor e = zeros({0, 3}, {DType::Complex64, Device()});
  EXPECT_EQ(view_as_real(e).shape(), (Shape{0, 3, 2}));
  EXPECT_EQ(add(e, e).shape(), (Shape{0, 3}));
}

Complex apply(const std::string& op, Complex a, Complex b) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  return a / b;
}

TEST(Complex, ArithmeticMatchesStdComplexWithBroadcasting) {
  for (DType dtype : complex_dtypes())
    for (bool real_right : {false, true}) {
      const Shape sa{3, 1, 4}, sb{2, 4}, out{3, 2, 4};
      const Tensor a = random_complex(sa, dtype);
      const Tensor b = real_right ? random_tensor(sb, complex_part_dtype(dtype))
                                  : contiguous(random_complex(sb, dtype).t()).t();  // strided
      const std::vector<Complex> va = complex_values(a);
      std::vector<Complex> vb;
      if (real_right) {
        for (double v : to_doubles(b)) vb.push_back({v, 0});
      } else {
        vb = complex_values(b);
      }
      for (const std::string op : {"add", "sub", "mul", "div"}) {
        const Tensor r = op == "add"   ? add(a, b)
                         : op == "sub" ? sub(a, b)
                         : op == "mul" ? mul(a, b)
                                       : div(a, b);
        ASSERT_EQ(r.shape(), out) << op;
        ASSERT_EQ(r.dtype(), dtype) << op;
        std::vector<Complex> expected(static_cast<size_t>(numel(out)));
        for (size_t i = 0; i < expected.size(); ++i)
          expected[i] =
              apply(op, va[broadcast_source(i, sa, out)], vb[broadcast_source(i, sb, out)]);
        EXPECT_TRUE(complex_close(complex_values(r), expected, complex_tolerance(dtype)))
            << op << " " << dtype_name(dtype) << (real_right ? " (real b)" : "");
      }
      // Reversed operands: a real tensor on the left.
      if (real_right) {
        const Tensor r = div(b, a);
        std::vector<Complex> expected(static_cast<size_t>(numel(out)));
        for (size_t i = 0; i < expected.size(); ++i)
          expected[i] = vb[broadcast_source(i, sb, out)] / va[broadcast_source(i, sa, out)];
        EXPECT_TRUE(complex_close(complex_values(r), expected, complex_tolerance(dtype)));
      }
    }
}

TEST(Complex, NumbersPromoteAndScale) {
  const Tensor z = random_complex({5}, DType::Complex64);
  const std::vector<Complex> v = complex_values(z);
  const Tensor twice = mul(z, Scalar(2.5));
  const Tensor shifted = add(z, Scalar(int64_t{3}));
  const Tensor scaled = add(z, z, Scalar(-0.5));
  EXPECT_EQ(twice.dtype(), DType::Complex64);
  const std::vector<Complex> t = complex_values(twice), s = complex_values(shifted),
                             h = complex_values(scaled);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_LE(std::abs(t[i] - v[i] * 2.5), 1e-5);
    EXPECT_LE(std::abs(s[i] - (v[i] + 3.0)), 1e-5);
    EXPECT_LE(std::abs(h[i] - v[i] * 0.5), 1e-5);
  }
  // complex64 with a float64 tensor widens to complex128, as torch.
  EXPECT_EQ(add(z, random_tensor({5}, DType::Float64)).dtype(), DType::Complex128);
}

TEST(Complex, AbsAngleConjNegAndEquality) {
  for (DType dtype : complex_dtypes()) {
    const Tensor z = random_complex({4, 3}, dtype).t();  // non-contiguous
    const std::vector<Complex> v = complex_values(z);
    const std::vector<double> mag = to_doubles(abs(z)), arg = to_doubles(angle(z));
    const std::vector<Complex> c = complex_values(conj(z)), n = complex_values(neg(z));
    EXPECT_EQ(abs(z).dtype(), complex_part_dtype(dtype));
    const double tol = complex_tolerance(dtype);
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_NEAR(mag[i], std::abs(v[i]), tol * std::max(1.0, std::abs(v[i])));
      EXPECT_NEAR(arg[i], std::arg(v[i]), tol * 4);
      EXPECT_EQ(c[i], std::conj(v[i]));
      EXPECT_EQ(n[i], -v[i]);
    }
    EXPECT_TRUE(all_close(to_doubles(eq(z, clone(z))), std::vector<double>(v.size(), 1.0), 0));
    const Tensor other = add(z, complex(zeros({3, 4}, {complex_part_dtype(dtype), Device()}),
                                        ones({3, 4}, {complex_part_dtype(dtype), Device()})));
    EXPECT_TRUE(all_close(to_doubles(ne(z, other)), std::vector<double>(v.size(), 1.0), 0));
  }
  // |z| with parts near the float32 limit does not overflow.
  const Tensor big = complex(full({1}, Scalar(3e38), {DType::Float32, Device()}),
                             full({1}, Scalar(1e38), {DType::Float32, Device()}));
  EXPECT_NEAR(to_doubles(abs(big))[0], std::hypot(3e38, 1e38), 1e32);
  // angle of real numbers: 0 or pi, NaN kept.
  const Tensor x = tensor_of({-2.0, 0.0, 3.0, std::nan("")}, {4}, DType::Float64);
  const std::vector<double> a = to_doubles(angle(x));
  EXPECT_EQ(a[0], M_PI);
  EXPECT_EQ(a[1], 0.0);
  EXPECT_EQ(a[2], 0.0);
  EXPECT_TRUE(std::isnan(a[3]));
}

TEST(Complex, OpsWithoutComplexSupportSayWhich) {
  const Tensor z = random_complex({3}, DType::Complex64);
  EXPECT_NE(error_message([&] { exp(z); }).find("exp: not supported for complex64"),
            std::string::npos);
  EXPECT_NE(error_message([&] { sum(z); }).find("does not support complex64"), std::string::npos);
  EXPECT_NE(error_message([&] { lt(z, z); }).find("lt: not supported for complex tensors"),
            std::string::npos);
  EXPECT_NE(error_message([&] { z.requires_grad_(true); }), "(no error)");
  const Tensor w = random_tensor({3}, DType::Float32).requires_grad_(true);
  EXPECT_NE(error_message([&] { mul(z, w); }).find("record no gradients"), std::string::npos);
  const Tensor pairs = random_tensor({3, 2}, DType::Float64).requires_grad_(true);
  EXPECT_NE(error_message([&] { view_as_complex(pairs); }).find("record no gradients"),
            std::string::npos);
  EXPECT_NE(error_message([&] { item(z.narrow(0, 0, 1)); }).find("is no real number"),
            std::string::npos);
}

// ---- linalg_eig: A V = V diag(w) in double-precision complex arithmetic --------------------

// max |A v_j - w_j v_j| over the batch, for A given as complex values.
double eig_residual(const std::vector<Complex>& a, const std::vector<Complex>& w,
                    const std::vector<Complex>& v, int64_t batch, int64_t n) {
  double worst = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i) {
        Complex av = 0;
        for (int64_t k = 0; k < n; ++k) av += a[(b * n + i) * n + k] * v[(b * n + k) * n + j];
        worst = std::max(worst, std::abs(av - w[b * n + j] * v[(b * n + i) * n + j]));
      }
  return worst;
}

TEST(Complex, EigSatisfiesTheEigenEquationForRealAndComplexInput) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::Complex64, DType::Complex128}) {
    const int64_t batch = 3, n = 5;
    const Tensor A = is_complex(dtype) ? random_complex({batch, n, n}, dtype)
                                       : random_tensor({batch, n, n}, dtype);
    const EigResult e = linalg_eig(contiguous(A.transpose(-2, -1)).transpose(-2, -1));
    const DType out = is_complex(dtype) ? dtype : complex_dtype_for(dtype);
    EXPECT_EQ(e.eigenvalues.dtype(), out);
    EXPECT_EQ(e.eigenvalues.shape(), (Shape{batch, n}));
    EXPECT_EQ(e.eigenvectors.shape(), (Shape{batch, n, n}));
    std::vector<Complex> a;
    if (is_complex(dtype)) {
      a = complex_values(A);
    } else {
      for (double x : to_doubles(A)) a.push_back({x, 0});
    }
    const std::vector<Complex> w = complex_values(e.eigenvalues),
                               v = complex_values(e.eigenvectors);
    const bool single = dtype == DType::Float32 || dtype == DType::Complex64;
    EXPECT_LE(eig_residual(a, w, v, batch, n), single ? 1e-4 : 1e-11) << dtype_name(dtype);
    // Unit columns; the trace is the sum of the eigenvalues.
    for (int64_t b = 0; b < batch; ++b) {
      Complex trace = 0, total = 0;
      for (int64_t i = 0; i < n; ++i) {
        trace += a[(b * n + i) * n + i];
        total += w[b * n + i];
        double norm = 0;
        for (int64_t k = 0; k < n; ++k) norm += std::norm(v[(b * n + k) * n + i]);
        EXPECT_NEAR(norm, 1.0, single ? 1e-5 : 1e-12);
      }
      EXPECT_LE(std::abs(trace - total), single ? 1e-4 : 1e-11);
    }
    // Real input: eigenvalues come in conjugate pairs.
    if (!is_complex(dtype))
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < n; ++i) {
          const Complex x = w[b * n + i];
          if (std::abs(x.imag()) < 1e-6) continue;
          bool paired = false;
          for (int64_t j = 0; j < n; ++j)
            paired = paired || std::abs(w[b * n + j] - std::conj(x)) < 1e-4;
          EXPECT_TRUE(paired) << x;
        }
    // Without vectors geev takes another path (eigenvalues only): equal to rounding.
    EXPECT_TRUE(complex_close(complex_values(linalg_eigvals(A)), w, single ? 1e-4 : 1e-10));
  }
}

TEST(Complex, EigOfKnownMatricesEmptyBatchesAndErrors) {
  // A rotation by 90 degrees: eigenvalues +-i.
  const Tensor rotation = tensor_of({0, -1, 1, 0}, {2, 2}, DType::Float64);
  const std::vector<Complex> w = complex_values(linalg_eigvals(rotation));
  EXPECT_LE(std::abs(w[0] - Complex(0, 1)), 1e-15);
  EXPECT_LE(std::abs(w[1] - Complex(0, -1)), 1e-15);
  const EigResult empty = linalg_eig(zeros({0, 3, 3}, {DType::Float32, Device()}));
  EXPECT_EQ(empty.eigenvalues.shape(), (Shape{0, 3}));
  EXPECT_EQ(empty.eigenvectors.dtype(), DType::Complex64);
  EXPECT_EQ(linalg_eig(zeros({2, 0, 0}, {DType::Float64, Device()})).eigenvectors.shape(),
            (Shape{2, 0, 0}));
  EXPECT_NE(error_message([&] {
              linalg_eig(random_tensor({3, 4}, DType::Float64));
            }).find("square matrices"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              linalg_eig(random_tensor({3, 3}, DType::Int64));
            }).find("Expected a float32, float64, complex64 or complex128 tensor as A"),
            std::string::npos);
  const Tensor leaf = random_tensor({2, 2}, DType::Float64).requires_grad_(true);
  EXPECT_NE(error_message([&] { linalg_eig(leaf); }).find("no gradient"), std::string::npos);
  // Non-finite input is refused before LAPACK sees it, as torch's.
  Tensor inf = random_tensor({2, 3, 3}, DType::Float32);
  fill_(inf.select(0, 1).select(0, 2).narrow(0, 1, 1), Scalar(INFINITY));
  EXPECT_NE(error_message([&] { linalg_eig(inf); }).find("contained non-finite values"),
            std::string::npos);
}

}  // namespace
}  // namespace rcuda::test
