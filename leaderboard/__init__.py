"""Static leaderboard (installed as matbench.leaderboard).

collect    find and validate results files, group them into one entry per model and revision
reported   the paper's published figures (reported.json), marked "reported", never measured
tables     table rows: columns are loops over each suite's declared metrics
plots      inline SVG primitives (line chart, heat map, bars, forest)
figures    one registered figure per suite that has one, reading declared metrics only
filters    the search box and facet selects above the overview and runs tables
downloads  every table as CSV and JSON (pandas), every run as leaderboard.parquet
evidence   where each number's evidence lives: copied into the site, or linked on the Hub
site       `matbench leaderboard build`: jinja2 templates -> a static site that works from file://
submit     `matbench submit`: a results file checked against its per-item log, stored content-addressed
"""
