from teiten.cli.main import main

raise SystemExit(main())
