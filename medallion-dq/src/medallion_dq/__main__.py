from medallion_dq.cli import main

raise SystemExit(main())
