from kvproof.checker.cli import main

raise SystemExit(main())
