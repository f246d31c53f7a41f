#include "kl_divergence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

namespace kiln::cli {

namespace {

// Mean and its standard error from a sum and a sum of squares.
std::pair<double, double> mean_and_error(double sum, double sum2, size_t count) {
    if (count < 1) return {0, 0};
    const double f = sum / static_cast<double>(count);
    double df = sum2 / static_cast<double>(count) - f * f;
    df = df > 0 && count > 10 ? std::sqrt(df / static_cast<double>(count - 1)) : 0.;
    return {f, df};
}

double covariance(double suma, double sumb, double sumab, size_t count) {
    if (count < 10) return 0.0;
    const double n = static_cast<double>(count);
    return (sumab / n - (suma / n) * (sumb / n)) / (n - 1);
}

// Linear interpolation between the sorted values around `fraction`.
float percentile(const std::vector<float>& sorted, float fraction) {
    if (fraction <= 0) return sorted.front();
    if (fraction >= 1) return sorted.back();
    float p = fraction * static_cast<float>(sorted.size() - 1);
    const auto ip = static_cast<size_t>(p);
    p -= static_cast<float>(ip);
    return (1 - p) * sorted[ip] + p * sorted[std::min(ip + 1, sorted.size() - 1)];
}

float median(const std::vector<float>& sorted) {
    const size_t n = sorted.size();
    return n % 2 == 0 ? 0.5f * (sorted[n / 2] + sorted[n / 2 - 1]) : sorted[n / 2];
}

}  // namespace

void KlDivergence::add(std::span<const float> logits, const uint16_t* base_row, TokenId token) {
    float max_logit = logits[0];
    size_t imax = 0;
    for (size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > max_logit) max_logit = logits[i], imax = i;
    double sum_exp = 0.0;
    for (float v : logits) sum_exp += std::exp(v - max_logit);
    const auto log_sum_exp = static_cast<float>(std::log(sum_exp));
    float scale, min_log_prob;
    std::memcpy(&scale, base_row, sizeof scale);
    std::memcpy(&min_log_prob, base_row + 2, sizeof min_log_prob);
    const uint16_t* base = base_row + 4;
    const auto tok = static_cast<size_t>(token);

    const float nll = max_logit + log_sum_exp - logits[tok];
    const float nll_base = -(scale * base[tok] + min_log_prob);
    sum_nll_ += nll;
    sum_nll2_ += nll * nll;
    sum_nll_base_ += nll_base;
    sum_nll_base2_ += nll_base * nll_base;
    sum_nll_nll_base_ += nll * nll_base;

    // KL(base || this) over the base's tokens within 16 nats of its best.
    const float log_norm = max_logit + log_sum_exp;
    double kld = 0;
    size_t imax_base = 0;
    float best_base = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
        const float lp_base = scale * base[i] + min_log_prob;
        if (i == 0 || lp_base > best_base) best_base = lp_base, imax_base = i;
        if (lp_base > -16.f) kld += std::exp(lp_base) * (lp_base - logits[i] + log_norm);
    }
    sum_kld_ += kld;
    sum_kld2_ += kld * kld;
    ++count_;
    same_top_ += imax == imax_base;

    const float p_diff = std::exp(-nll) - std::exp(-nll_base);
    sum_p_diff_ += p_diff;
    const double p_diff2 = static_cast<double>(p_diff) * p_diff;
    sum_p_diff2_ += p_diff2;
    sum_p_diff4_ += p_diff2 * p_diff2;
    max_p_diff_ = std::max(max_p_diff_, std::fabs(p_diff));
    kld_values_.push_back(static_cast<float>(kld));
    p_diff_values_.push_back(p_diff);
}

nlohmann::json KlDivergence::running() const {
    const auto lp = mean_and_error(sum_nll_, sum_nll2_, count_);
    const auto lb = mean_and_error(sum_nll_base_, sum_nll_base2_, count_);
    const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_, count_);
    const auto kld = mean_and_error(sum_kld_, sum_kld2_, count_);
    const auto mse = mean_and_error(sum_p_diff2_, sum_p_diff4_, count_);
    const double top = count_ ? static_cast<double>(same_top_) / static_cast<double>(count_) : 0;
    return {{"ppl", std::exp(lp.first)},
            {"ppl_error", std::exp(lp.first) * lp.second},
            {"ln_ppl_ratio", lp.first - lb.first},
            {"ln_ppl_ratio_error", std::sqrt(std::max(0.0, lp.second * lp.second + lb.second * lb.second - 2.0 * cov))},
            {"kld", kld.first},
            {"kld_error", kld.second},
            {"rms_p_diff", std::sqrt(mse.first)},
            {"same_top", top},
            {"same_top_error", count_ > 1 ? std::sqrt(top * (1 - top) / static_cast<double>(count_ - 1)) : 0.0}};
}

nlohmann::json KlDivergence::summary() const {
    nlohmann::json s = running();
    const auto lp = mean_and_error(sum_nll_, sum_nll2_, count_);
    const auto lb = mean_and_error(sum_nll_base_, sum_nll_base2_, count_);
    const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_, count_);
    const double ppl = std::exp(lp.first), ppl_base = std::exp(lb.first);
    s["scored"] = count_;
    s["ppl_base"] = ppl_base;
    s["ppl_base_error"] = ppl_base * lb.second;
    s["ln_ppl_correlation"] = lp.second > 0 && lb.second > 0 ? cov / (lp.second * lb.second) : 0.0;
    s["ppl_ratio"] = std::exp(lp.first - lb.first);
    s["ppl_diff"] = ppl - ppl_base;
    const auto pd = mean_and_error(sum_p_diff_, sum_p_diff2_, count_);
    s["mean_p_diff"] = pd.first;
    s["mean_p_diff_error"] = pd.second;
    s["max_abs_p_diff"] = max_p_diff_;
    if (count_ == 0) return s;
    std::vector<float> kld = kld_values_, p_diff = p_diff_values_;
    std::sort(kld.begin(), kld.end());
    std::sort(p_diff.begin(), p_diff.end());
    s["kld_percentiles"] = {{"max", kld.back()},
                            {"99.9", percentile(kld, 0.999f)},
                            {"99", percentile(kld, 0.99f)},
                            {"95", percentile(kld, 0.95f)},
                            {"90", percentile(kld, 0.9f)},
                            {"median", median(kld)},
                            {"10", percentile(kld, 0.1f)},
                            {"5", percentile(kld, 0.05f)},
                            {"1", percentile(kld, 0.01f)},
                            {"0.1", percentile(kld, 0.001f)},
                            {"min", kld.front()}};
    s["p_diff_percentiles"] = {{"max", p_diff.back()},
                               {"99.9", percentile(p_diff, 0.999f)},
                               {"99", percentile(p_diff, 0.99f)},
                               {"95", percentile(p_diff, 0.95f)},
                               {"90", percentile(p_diff, 0.9f)},
                               {"75", percentile(p_diff, 0.75f)},
                               {"median", median(p_diff)},
                               {"25", percentile(p_diff, 0.25f)},
                               {"10", percentile(p_diff, 0.1f)},
                               {"5", percentile(p_diff, 0.05f)},
                               {"1", percentile(p_diff, 0.01f)},
                               {"0.1", percentile(p_diff, 0.001f)},
                               {"min", p_diff.front()}};
    return s;
}

void print_kl_summary(const nlohmann::json& s) {
    auto d = [&](const char* k) { return s[k].get<double>(); };
    std::printf("====== Perplexity statistics ======\n");
    std::printf("Mean PPL(Q)                   : %10.6f ± %10.6f\n", d("ppl"), d("ppl_error"));
    std::printf("Mean PPL(base)                : %10.6f ± %10.6f\n", d("ppl_base"), d("ppl_base_error"));
    std::printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100 * d("ln_ppl_correlation"));
    std::printf("Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", d("ln_ppl_ratio"), d("ln_ppl_ratio_error"));
    std::printf("Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", d("ppl_ratio"), d("ppl_ratio") * d("ln_ppl_ratio_error"));
    std::printf("Mean PPL(Q)-PPL(base)         : %10.6f\n\n", d("ppl_diff"));
    std::printf("====== KL divergence statistics ======\n");
    std::printf("Mean    KLD: %10.6f ± %10.6f\n", d("kld"), d("kld_error"));
    if (s.contains("kld_percentiles"))
        for (const char* k : {"max", "99.9", "99", "95", "90", "median", "10", "5", "1", "0.1", "min"})
            std::printf("%-7s KLD: %10.6f\n", k, s["kld_percentiles"][k].get<double>());
    std::printf("\n====== Token probability statistics ======\n");
    std::printf("Mean    Δp: %6.3f ± %5.3f %%\n", 100 * d("mean_p_diff"), 100 * d("mean_p_diff_error"));
    if (s.contains("p_diff_percentiles"))
        for (const char* k : {"max", "99.9", "99", "95", "90", "75", "median", "25", "10", "5", "1", "0.1", "min"})
            std::printf("%-7s  Δp: %6.3f%%\n", k, 100 * s["p_diff_percentiles"][k].get<double>());
    std::printf("RMS Δp    : %6.3f %%\n", 100 * d("rms_p_diff"));
    std::printf("Same top p: %6.3f ± %5.3f %%\n", 100 * d("same_top"), 100 * d("same_top_error"));
}

}  // namespace kiln::cli
