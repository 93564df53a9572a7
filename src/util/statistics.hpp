// Small statistics helpers for timings and rank comparisons.
#pragma once

#include <vector>

namespace orchid {

// Median of the values (mean of the two middle ones for an even count); 0 when empty.
double median(std::vector<double> values);
// Nearest-rank percentile of already sorted values, q in [0, 1]; 0 when empty.
double percentile_of_sorted(const std::vector<double>& sorted, double q);
// Sample standard deviation over the mean (0 for fewer than two values or a zero mean):
// the spread of repeated timings, comparable between a 5 us kernel and a 5 s model.
double coefficient_of_variation(const std::vector<double>& values);
// Ranks 1..n with ties given their average rank.
std::vector<double> average_ranks(const std::vector<double>& values);
// Spearman's rank correlation (Pearson correlation of the average ranks) of two equally
// long vectors; NaN when there are fewer than two pairs or either side is constant.
double spearman_rank_correlation(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace orchid
