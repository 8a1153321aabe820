from medallion_dq.tools.cli import main

raise SystemExit(main())
