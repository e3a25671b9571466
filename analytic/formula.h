// Formulas of named workload parameters (b, s, h, layers, t, p, d, v, m, ...), as the symbolic
// form prints them (analytic/symbolic.h): a coefficient times a product of polynomials, each a
// sum of monomials with integer powers (negative for a division), e.g.
//
//     (m v + p - 1) (layers / (p v)) (24 b s h^2 + 4 b s^2 h) / t
//
// They print as written and evaluate with the parameters' values, so a test can hold the
// printed form to the number it stands for.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessera::analytic {

using SymbolValues = std::map<std::string, double>;

struct Monomial {
  double coefficient = 1;
  std::vector<std::pair<std::string, int>> powers;  // symbol and power, in the order written
};

struct Polynomial {
  std::vector<Monomial> terms;
};

Monomial monomial(double coefficient, std::vector<std::pair<std::string, int>> powers = {});
Polynomial polynomial(std::vector<Monomial> terms);

class Formula {
 public:
  Formula() = default;  // empty: no formula (evaluates to 0, prints "")
  explicit Formula(Polynomial p) { factors_.push_back(std::move(p)); }
  explicit Formula(Monomial m) { factors_.push_back(polynomial({std::move(m)})); }

  bool empty() const { return factors_.empty(); }
  // This times `other` (the factors side by side).
  Formula times(const Formula& other) const;
  // NaN where a symbol has no value.
  double evaluate(const SymbolValues& values) const;
  std::string text() const;

 private:
  double coefficient_ = 1;
  std::vector<Polynomial> factors_;
};

// The text of a number as the formulas print it (shortest of %g forms that reads back equal,
// at most 6 significant digits).
std::string number_text(double value);

}  // namespace tessera::analytic
