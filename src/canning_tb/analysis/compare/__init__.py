"""Two sides (one or many digests each) compared per step: `verdict.compare` is the comparison; `side`
puts a side per step, `ops` / `tree` / `memory` / `comm` its parts, `legacy` the first version's fields."""
