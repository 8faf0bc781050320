"""Static leaderboard (installed as matbench.leaderboard).

collect    find and validate results files, group them into one entry per model and revision
reported   the paper's published figures (reported.json), marked "reported", never measured
plots      inline SVG figures (access envelope, trigger heat map, programming arms, harvest deltas)
site       `matbench leaderboard build`: jinja2 templates -> a static site that works from file://
submit     `matbench submit`: a results file checked against its per-item log, stored content-addressed
"""
