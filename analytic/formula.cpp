#include "analytic/formula.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace tessera::analytic {
namespace {

double evaluate(const Monomial& m, const SymbolValues& values) {
  double v = m.coefficient;
  for (const auto& [symbol, power] : m.powers) {
    auto it = values.find(symbol);
    if (it == values.end()) return std::numeric_limits<double>::quiet_NaN();
    v *= std::pow(it->second, power);
  }
  return v;
}

double evaluate(const Polynomial& p, const SymbolValues& values) {
  double v = 0;
  for (const Monomial& m : p.terms) v += evaluate(m, values);
  return v;
}

// "b s^2 h" or "layers / (p v)" (without the coefficient).
std::string symbols_text(const Monomial& m) {
  std::string up, down;
  int downs = 0;
  for (const auto& [symbol, power] : m.powers) {
    std::string& side = power > 0 ? up : down;
    const int n = std::abs(power);
    if (power == 0) continue;
    if (!side.empty()) side += " ";
    side += symbol;
    if (n > 1) side += "^" + std::to_string(n);
    if (power < 0) ++downs;
  }
  if (down.empty()) return up;
  if (downs > 1) down = "(" + down + ")";
  return (up.empty() ? "1" : up) + " / " + down;
}

// A monomial with its sign left out (the caller writes " + " or " - ").
std::string magnitude_text(const Monomial& m) {
  const double c = std::fabs(m.coefficient);
  const std::string symbols = symbols_text(m);
  if (symbols.empty()) return number_text(c);
  return c == 1 ? symbols : number_text(c) + " " + symbols;
}

std::string text(const Polynomial& p) {
  std::string s;
  for (size_t i = 0; i < p.terms.size(); ++i) {
    const bool negative = p.terms[i].coefficient < 0;
    if (i == 0) s += negative ? "-" : "";
    else s += negative ? " - " : " + ";
    s += magnitude_text(p.terms[i]);
  }
  return s;
}

}  // namespace

std::string number_text(double value) {
  char buffer[40];
  for (int digits = 1; digits <= 6; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value) return buffer;
  }
  return buffer;
}

Monomial monomial(double coefficient, std::vector<std::pair<std::string, int>> powers) {
  return Monomial{coefficient, std::move(powers)};
}

Polynomial polynomial(std::vector<Monomial> terms) { return Polynomial{std::move(terms)}; }

Formula Formula::times(const Formula& other) const {
  if (empty() || other.empty()) return {};
  Formula f = *this;
  f.coefficient_ *= other.coefficient_;
  f.factors_.insert(f.factors_.end(), other.factors_.begin(), other.factors_.end());
  return f;
}

double Formula::evaluate(const SymbolValues& values) const {
  if (empty()) return 0;
  double v = coefficient_;
  for (const Polynomial& p : factors_) v *= analytic::evaluate(p, values);
  return v;
}

std::string Formula::text() const {
  if (empty()) return "";
  std::string s = coefficient_ == 1 ? "" : number_text(coefficient_);
  const bool alone = factors_.size() == 1 && s.empty();
  for (const Polynomial& p : factors_) {
    const std::string t = analytic::text(p);
    const bool bracket = !alone && (p.terms.size() > 1 || t.find(" / ") != std::string::npos);
    if (!s.empty()) s += " ";
    s += bracket ? "(" + t + ")" : t;
  }
  return s;
}

}  // namespace tessera::analytic
